// Drawing one message of the transcript as an <article>: the user's question as plain text, an
// answer as Markdown with its reasoning, tool rows, ending and marble diagram.
//
// A message's state is the <article>'s data-state: streaming, done, error, stopped (the reader
// pressed Stop: an ending, not a failure), withdrawn (a guardrail took the answer back) or aborted
// (the page gave up reconnecting).

import { drawApprovalCard, drawOutputCard, withdrawnNote } from './cards.js';
import { el } from './dom.js';
import { renderMarkdown } from './markdown.js';

const TOOL_MARKS = { running: '⋯', done: '✓', error: '✗' };

// An agent run as a tool shows its run so far: {agent, text, tools: [{name, state}]}.
const isNestedRun = (value) =>
  value && typeof value === 'object' && typeof value.agent === 'string' && Array.isArray(value.tools);

function show(value) {
  if (typeof value === 'string') return value;
  if (isNestedRun(value)) {
    const tools = value.tools.map((t) => `${t.name} ${TOOL_MARKS[t.state] || ''}`.trim()).join(', ');
    return `${value.agent}${tools ? ` [${tools}]` : ''}: ${value.text}`;
  }
  return JSON.stringify(value);
}

function drawTool(part) {
  const row = el('div', 'tool-row');
  row.dataset.state = part.state;
  const mark = { 'output-available': '✓', 'output-error': '✗' }[part.state] || '⋯';
  row.append(el('span', 'mark', mark), el('span', 'name', part.name));
  row.append(el('span', 'args', part.input !== undefined ? show(part.input) : part.inputText));
  if (part.state === 'output-available' || part.state === 'output-streaming') {
    row.append(el('span', 'result', show(part.output)));
  }
  if (part.state === 'output-error') row.append(el('span', 'result', part.errorText));
  return row;
}

function drawReasoning(part) {
  const details = el('details', 'reasoning');
  details.open = !!part.open;
  details.addEventListener('toggle', () => { part.open = details.open; });
  details.append(el('summary', '', 'Reasoning'), el('pre', '', part.text));
  return details;
}

// An answer's text as Markdown; as plain text if that fails (a transcript saved by another
// version, a bug): one answer the renderer cannot take must not break the page, on every load.
function drawText(text) {
  const box = el('div', 'answer-text markdown');
  try {
    box.append(renderMarkdown(text));
  } catch (error) {
    console.warn('answer drawn as plain text:', error);
    box.className = 'answer-text plain';
    box.replaceChildren(String(text ?? ''));
  }
  return box;
}

// A run's diagram is fetched once (fetch carries the page's token, auth.js; no cookie does) and
// shown from a blob: URL, which every re-render of the message reuses.
const marbleUrls = new Map();

function marbleUrl(runId) {
  if (!marbleUrls.has(runId)) {
    const url = fetch(`/api/runs/${encodeURIComponent(runId)}/marbles.svg`)
      .then((response) => (response.ok ? response.blob() : Promise.reject(response.status)))
      .then((blob) => URL.createObjectURL(blob));
    url.catch(() => marbleUrls.delete(runId)); // a later render asks again
    marbleUrls.set(runId, url);
  }
  return marbleUrls.get(runId);
}

function drawMarbles(runId) {
  const marbles = el('details', 'marbles');
  marbles.open = true;
  const img = el('img', 'marble-svg');
  img.alt = 'marble diagram of the run';
  marbleUrl(runId).then((url) => { img.src = url; }, () => {});
  marbles.append(el('summary', '', 'the run as a marble diagram'), img);
  return marbles;
}

// `decide(toolPart, approved)` answers a call's approval request.
export function draw(msg, decide) {
  const node = el('article', 'msg ' + msg.role);
  if (msg.role === 'user') {
    // What the user typed is shown as typed: no Markdown, no markup.
    node.append(el('div', 'who', 'you'), el('div', 'user-text', msg.text));
    return node;
  }
  node.dataset.state = msg.state;
  if (msg.runId) node.dataset.runId = msg.runId;
  const who = el('div', 'who', 'agent');
  who.append(el('span', 'status', msg.state));
  node.append(who);
  for (const part of msg.parts) {
    if (part.kind === 'text') node.append(drawText(part.text)); else if (part.kind === 'reasoning') node.append(drawReasoning(part));
    else if (part.kind === 'tool' && part.approval) {
      node.append(drawApprovalCard(part, drawTool(part), (approved) => decide(part, approved)));
    } else if (part.kind === 'tool') node.append(drawTool(part));
  }
  if (msg.output) node.append(drawOutputCard(msg.output));
  if (msg.error) node.append(el('div', 'error-text', msg.error));
  if (msg.withdrawn) node.append(withdrawnNote(msg.withdrawn));
  if (msg.note) node.append(el('div', 'note-text', msg.note));
  if (msg.state !== 'streaming' && msg.runId) node.append(drawMarbles(msg.runId));
  return node;
}
