// Talks to rxreact's AG-UI endpoint with the official client, @ag-ui/client's HttpAgent: its
// request body, SSE parsing, event verification (order, open messages and steps) and the
// message state it builds from the events.
//
//   node ag_ui_agent.mjs URL THREAD_ID QUESTION [OPTIONS_JSON]
//
// OPTIONS_JSON: {"tools": [...]}          client-side tools offered with every run
//               {"toolResult": "text"}     the answer to every pending client-side tool call
//               {"approve": true|false}    the answer to every interrupt
//               {"headers": {...}}         request headers (a bearer token)
//               {"content": [...]}         the user message's parts (QUESTION is ignored)
//
// The agent runs until a run ends without anything pending (answering pending tool calls
// and interrupts as the options say, one run each). Prints one JSON line per run,
// {"runId", "events", "outcome", "error"}, then {"messages": the agent's messages}.
import { HttpAgent } from '@ag-ui/client';

const [url, threadId, question, optionsJson] = process.argv.slice(2);
const options = optionsJson ? JSON.parse(optionsJson) : {};
const agent = new HttpAgent({ url, threadId, headers: options.headers ?? {} });
agent.addMessage({ id: 'user-1', role: 'user', content: options.content ?? question });

const print = value => process.stdout.write(JSON.stringify(value) + '\n');

let parameters = { tools: options.tools ?? [] };
for (let runs = 1; runs <= 5; runs++) {
  const record = { runId: `run-${runs}`, events: [], outcome: null, error: null };
  const subscriber = {
    onEvent: ({ event }) => {
      record.events.push(event);
    },
    onRunFinishedEvent: params => {
      record.outcome = {
        outcome: params.outcome,
        pendingToolCallIds: params.pendingToolCallIds ?? [],
        interrupts: params.interrupts ?? [],
      };
    },
    onRunErrorEvent: ({ event }) => {
      record.error = event.message;
    },
    onRunFailed: ({ error }) => {
      record.error = record.error ?? String(error?.message ?? error);
    },
  };
  try {
    await agent.runAgent({ ...parameters, runId: record.runId }, subscriber);
  } catch (error) {
    record.error = record.error ?? String(error?.message ?? error);
  }
  print(record);
  const outcome = record.outcome;
  if (record.error !== null || outcome === null) break;
  parameters = { tools: options.tools ?? [] };
  if (outcome.outcome === 'interrupt' && options.approve !== undefined) {
    parameters.resume = outcome.interrupts.map(interrupt => ({
      interruptId: interrupt.id,
      status: 'resolved',
      payload: { approved: options.approve },
    }));
  } else if (outcome.pendingToolCallIds.length > 0 && options.toolResult !== undefined) {
    for (const id of outcome.pendingToolCallIds) {
      agent.addMessage({ id: `result-${id}`, role: 'tool', toolCallId: id, content: options.toolResult });
    }
  } else {
    break;
  }
}
print({ messages: agent.messages });
