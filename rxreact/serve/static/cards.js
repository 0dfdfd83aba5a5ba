// What the stream says besides text and tool rows: approvals asked and decided, and text taken
// back (a round restarted on another worker, a guardrail that tripped after the text went out).
//
// Every change arrives through the run's stream, never from a button's own answer: each open
// page of the conversation follows that stream, so a decision made in one shows in all, and a
// reload (which replays the run from its first event) shows the card as it stands.

import { el } from './dom.js';

const withoutParts = (msg, ids, kinds) => {
  const drop = new Set(ids || []);
  msg.parts = msg.parts.filter((part) => !(kinds.includes(part.kind) && drop.has(part.id)));
};

function tool(msg, id) {
  for (let i = msg.parts.length - 1; i >= 0; i--) {
    if (msg.parts[i].kind === 'tool' && msg.parts[i].id === id) return msg.parts[i];
  }
  return null;
}

// Applies one part of these kinds to `msg`; false for a part of another kind.
export function applyCardPart(msg, part) {
  switch (part.type) {
    case 'tool-approval-request': {
      const target = tool(msg, part.toolCallId);
      if (target) Object.assign(target, { state: 'approval-requested', approval: { id: part.approvalId } });
      return true;
    }
    case 'data-approval': { // decided, here or on another page of the conversation
      const target = tool(msg, part.data.approvalId);
      if (target && target.approval) {
        Object.assign(target.approval, { approved: part.data.approved, sending: false });
        if (target.state === 'approval-requested') target.state = 'approval-responded';
      }
      return true;
    }
    case 'data-round-restarted': // the round streams again under new ids: forget the old
      withoutParts(msg, part.data.partIds, ['text', 'reasoning']);
      withoutParts(msg, part.data.toolCallIds, ['tool']);
      return true;
    case 'data-output': // the typed answer so far: one card, its value replaced each time
      msg.output = part.data.reset === undefined
        ? { round: part.data.round, value: part.data.output, final: !!part.data.final }
        : { round: part.data.round, value: {}, reset: part.data.reset };
      return true;
    case 'data-guardrail-tripped': // the text shown is taken back; the run's error follows
      withoutParts(msg, part.data.partIds, ['text']);
      msg.withdrawn = { guardrail: part.data.guardrail, kind: part.data.kind, reason: part.data.reason };
      return true;
    default:
      return false;
  }
}

// The tool row of a call that waited for approval, as a card: Approve / Deny while it waits,
// the decision once the stream has told it. `decide(approved)` sends the decision.
export function drawApprovalCard(part, row, decide) {
  const card = el('div', 'approval-card');
  const { approval } = part;
  card.dataset.approval = approval.approved === undefined ? 'waiting' : approval.approved ? 'approved' : 'denied';
  const head = el('div', 'approval-head', `${part.name} asks for approval`);
  card.append(head, row);
  if (approval.approved === undefined) {
    const buttons = el('div', 'approval-buttons');
    for (const [label, approved] of [['Approve', true], ['Deny', false]]) {
      const button = el('button', approved ? 'approve' : 'deny', label);
      button.type = 'button';
      button.disabled = !!approval.sending;
      button.addEventListener('click', () => decide(approved));
      buttons.append(button);
    }
    card.append(buttons);
  } else {
    card.append(el('div', 'approval-decision', approval.approved ? 'approved' : 'denied'));
  }
  if (approval.error) card.append(el('div', 'error-text', approval.error));
  return card;
}

// The neutral line of a run a guardrail stopped: an ending the agent's rules chose, not a failure.
export function withdrawnNote(withdrawn) {
  const why = withdrawn.reason ? `: ${withdrawn.reason}` : '';
  const what = withdrawn.kind === 'input' ? 'The question was refused' : 'The answer was withdrawn';
  return el('div', 'note-text withdrawn-text',
    `${what} by the ${withdrawn.kind} guardrail ${withdrawn.guardrail}${why}`);
}

// The typed answer as a form that fills in while it streams: one row per field, nested
// values as JSON; "forming", "rejected: <why>" (a new draft follows) or "done".
export function drawOutputCard(output) {
  const card = el('div', 'output-card');
  card.dataset.state = output.final ? 'done' : output.reset ? 'reset' : 'forming';
  card.dataset.round = String(output.round);
  const head = output.final ? 'answer' : output.reset ? `rejected: ${output.reset}` : 'forming…';
  card.append(el('div', 'output-head', head));
  const value = output.value;
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const fields = el('dl', 'output-fields');
    for (const [key, item] of Object.entries(value)) {
      fields.append(el('dt', '', key), el('dd', '', typeof item === 'string' ? item : JSON.stringify(item)));
    }
    card.append(fields);
  } else {
    card.append(el('pre', 'output-value', JSON.stringify(value)));
  }
  return card;
}
