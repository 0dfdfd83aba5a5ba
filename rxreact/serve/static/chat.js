// rxreact chat page: a small client of the AI SDK UI message stream (no build step; ES modules:
// draw.js draws a message, markdown.js an answer's text, scroll.js follows the stream).
//
// The transcript lives in localStorage. A reload during an answer replays the run from its
// first event (GET /api/runs/{run}/stream: it may even have finished meanwhile); a dropped
// connection without a reload resumes from the last SSE id (Last-Event-ID). Stop asks the
// server to cancel the run; closing the page never does.

import { applyCardPart } from './cards.js';
import { draw } from './draw.js';
import { scrollFollower } from './scroll.js';

const STORE = 'rxreact.chat.v1';
const $ = (id) => document.getElementById(id);
const messagesEl = $('messages');
const input = $('input');
const sendButton = $('send');
const stopButton = $('stop');
const elements = new Map(); // message object -> its element
const follower = scrollFollower(messagesEl);

const newId = (prefix) =>
  prefix + '-' + (crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2));

function load() {
  try {
    const saved = JSON.parse(localStorage.getItem(STORE));
    if (saved && saved.id && Array.isArray(saved.messages)) return saved;
  } catch (_) { /* a broken store starts a new chat */ }
  return { id: newId('chat'), messages: [] };
}

let chat = load();
let streaming = null; // the assistant message being streamed
let aborter = null;
const save = () => localStorage.setItem(STORE, JSON.stringify(chat));

// -- applying UI message stream parts -------------------------------------------------

function findPart(msg, kind, id) {
  for (let i = msg.parts.length - 1; i >= 0; i--) {
    const part = msg.parts[i];
    if (part.kind === kind && part.id === id) return part;
  }
  return null;
}

function apply(msg, part) {
  if (applyCardPart(msg, part)) return;
  switch (part.type) {
    case 'start':
      if (part.messageId) msg.runId = part.messageId;
      break;
    case 'text-start':
    case 'reasoning-start':
      msg.parts.push({ kind: part.type.split('-')[0], id: part.id, text: '' });
      break;
    case 'text-delta':
    case 'reasoning-delta': {
      const target = findPart(msg, part.type.split('-')[0], part.id);
      if (target) target.text += part.delta;
      break;
    }
    case 'tool-input-start':
      msg.parts.push({ kind: 'tool', id: part.toolCallId, name: part.toolName, inputText: '', state: 'input-streaming' });
      break;
    case 'tool-input-delta': {
      const tool = findPart(msg, 'tool', part.toolCallId);
      if (tool) tool.inputText += part.inputTextDelta;
      break;
    }
    case 'tool-input-available': {
      // A call of an agent tool's run that asks for approval arrives without its input-start.
      const tool = findPart(msg, 'tool', part.toolCallId)
        || msg.parts[msg.parts.push({ kind: 'tool', id: part.toolCallId, name: part.toolName, inputText: '' }) - 1];
      Object.assign(tool, { input: part.input, state: 'input-available' });
      break;
    }
    case 'tool-output-available': {
      const tool = findPart(msg, 'tool', part.toolCallId);
      // preliminary: a tool's progress, or the run of an agent it calls, so far
      if (tool) Object.assign(tool, { output: part.output, state: part.preliminary ? 'output-streaming' : 'output-available' });
      break;
    }
    case 'tool-output-error': {
      const tool = findPart(msg, 'tool', part.toolCallId);
      if (tool) Object.assign(tool, { errorText: part.errorText, state: 'output-error' });
      break;
    }
    case 'error': // after a guardrail's trip, the withdrawal note says it all
      if (!msg.withdrawn) msg.error = part.errorText;
      break;
    case 'finish':
      msg.state = msg.withdrawn ? 'withdrawn' : msg.error ? 'error' : 'done';
      break;
    case 'abort': // the run was cancelled (Stop, here or in another tab): it ended, not failed
      msg.state = 'stopped';
      break;
    default: // start-step, finish-step and parts this page does not draw
  }
}

// -- reading a stream -----------------------------------------------------------------

async function readStream(msg, response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, '\n');
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let id = null;
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('id:')) id = line.slice(3).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (!data.length) continue; // a heartbeat comment
      const text = data.join('\n');
      if (text === '[DONE]') return;
      apply(msg, JSON.parse(text));
      if (id !== null) msg.lastSeq = Number(id);
    }
    drawSoon(msg);
  }
}

// While an answer streams it is saved and drawn at most every DRAW_EVERY_MS, not per chunk:
// each draw parses the whole answer again, so per chunk a long answer costs the square of its
// length (and every save writes the whole transcript).
const DRAW_EVERY_MS = 100;
let drawTimer = null;

function drawSoon(msg) {
  if (drawTimer !== null) return;
  drawTimer = setTimeout(() => {
    drawTimer = null;
    if (chat.messages.includes(msg)) drawNow(msg); // not a message of a chat left meanwhile
  }, DRAW_EVERY_MS);
}

function drawNow(msg) {
  if (drawTimer !== null) clearTimeout(drawTimer);
  drawTimer = null;
  save();
  render(msg);
}

async function errorOf(response) {
  try {
    const body = await response.json();
    return body.detail || body.error || response.statusText;
  } catch (_) {
    return response.status + ' ' + response.statusText;
  }
}

// A dropped connection is tried again, ever more slowly, for this long: long enough for a
// worker to restart (a deploy, a crash), since the run (even one parked on an approval, with a
// durable event log) lives on without it.
const RETRY_FOR_MS = 60000;
const retryDelay = (attempt) => Math.min(250 * attempt, 2000);

// Streams `msg` from `request()`; on a dropped connection, resumes from the last SSE id.
async function follow(msg, request) {
  streaming = msg;
  setBusy(true);
  let attempt = 0;
  let failingSince = 0; // when the connection first failed since the last response
  let next = request;
  while (msg.state === 'streaming') {
    aborter = new AbortController();
    try {
      const response = await next(aborter.signal);
      if (response.status === 204) {
        msg.state = 'done';
        msg.note = 'the answer finished while this page was away';
        break;
      }
      if (!response.ok) {
        msg.error = await errorOf(response);
        msg.state = 'error';
        break;
      }
      attempt = 0;
      failingSince = 0;
      await readStream(msg, response);
      if (msg.state === 'streaming') throw new Error('stream ended early');
    } catch (error) {
      failingSince = failingSince || Date.now();
      if (aborter.signal.aborted || Date.now() - failingSince > RETRY_FOR_MS) {
        msg.state = msg.state === 'streaming' ? 'aborted' : msg.state;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, retryDelay(++attempt)));
      // The run itself when its id is known: it may have finished meanwhile.
      next = (signal) => fetch(streamUrl(msg), {
        headers: { 'Last-Event-ID': String(msg.lastSeq || 0) },
        signal,
      });
    }
  }
  streaming = null;
  aborter = null;
  drawNow(msg);
  setBusy(false);
}

function streamUrl(msg) {
  return msg.runId
    ? `/api/runs/${encodeURIComponent(msg.runId)}/stream`
    : `/api/chat/${encodeURIComponent(chat.id)}/stream`;
}

function send(text) {
  const user = { role: 'user', id: newId('msg'), text };
  const msg = { role: 'assistant', state: 'streaming', parts: [], lastSeq: 0 };
  chat.messages.push(user, msg);
  save();
  render(user);
  render(msg);
  follower.follow(); // the new question and its answer in view, even if the reader was up
  const body = {
    id: chat.id,
    trigger: 'submit-message',
    messages: [{ id: user.id, role: 'user', parts: [{ type: 'text', text }] }],
  };
  return follow(msg, (signal) => fetch('/api/chat', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  }));
}

// Sends a decision on `tool`'s approval; the card changes when the run's stream says so.
async function decide(msg, tool, approved) {
  Object.assign(tool.approval, { sending: true, error: null });
  render(msg);
  const body = { approvalId: tool.approval.id, approved };
  if (!approved) body.reason = 'denied on the chat page';
  try {
    const response = await fetch(`/api/chat/${encodeURIComponent(chat.id)}/approve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!response.ok) Object.assign(tool.approval, { sending: false, error: await errorOf(response) });
  } catch (error) {
    Object.assign(tool.approval, { sending: false, error: String(error) });
  }
  render(msg);
}

async function stop() {
  stopButton.disabled = true;
  await fetch(`/api/chat/${encodeURIComponent(chat.id)}/cancel`, { method: 'POST' });
}

// -- drawing ------------------------------------------------------------------------

function render(msg) {
  const node = draw(msg, (tool, approved) => decide(msg, tool, approved));
  const old = elements.get(msg);
  if (old) old.replaceWith(node); else messagesEl.append(node);
  elements.set(msg, node);
  follower.watch(node, old);
}

function setBusy(busy) {
  sendButton.disabled = busy;
  stopButton.hidden = !busy;
  stopButton.disabled = !busy;
  document.body.dataset.busy = busy ? 'true' : 'false';
}

function start() {
  $('conversation').textContent = chat.id;
  messagesEl.replaceChildren();
  elements.clear();
  follower.reset();
  const last = chat.messages[chat.messages.length - 1];
  // The page gave up reconnecting, not the run (one parked on an approval may wait for days):
  // a reload tries again. Before drawing, so no marble diagram is asked of a run still going.
  if (last && last.role === 'assistant' && last.state === 'aborted') last.state = 'streaming';
  chat.messages.forEach(render);
  setBusy(false);
  if (last && last.role === 'assistant' && last.state === 'streaming') {
    // Reloaded mid-answer: replay the run from its first event (the run itself when its id
    // arrived before the reload, else the conversation's active run).
    last.parts = [];
    last.lastSeq = 0;
    last.error = null;
    last.withdrawn = null;
    follow(last, (signal) => fetch(streamUrl(last), { signal }));
  }
}

$('composer').addEventListener('submit', (event) => {
  event.preventDefault();
  const text = input.value.trim();
  if (!text || streaming) return;
  input.value = '';
  send(text);
});
input.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey) {
    event.preventDefault();
    $('composer').requestSubmit();
  }
});
stopButton.addEventListener('click', stop);
$('new-chat').addEventListener('click', () => {
  if (streaming) return;
  chat = { id: newId('chat'), messages: [] };
  save();
  start();
});

start();
