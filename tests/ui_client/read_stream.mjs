// Reads rxreact's UI message stream with the `ai` package's own client code: the transport
// useChat uses (DefaultChatTransport: request body, SSE parsing, chunk schema validation, 204 on
// resume) and readUIMessageStream (chunks -> UIMessage, the state machine useChat runs).
//
//   node read_stream.mjs API send CHAT_ID QUESTION [STOP_AFTER] [PARTS_JSON]
//                                                                 POST API, read the stream; the
//                                                                 user message's parts: QUESTION
//                                                                 (if not empty) then PARTS_JSON
//                                                                 (file parts, as sendMessage's
//                                                                 files become)
//   node read_stream.mjs API resume CHAT_ID                       GET API/CHAT_ID/stream
//
// Prints one JSON object: {chunks, message, errors} (or {resumed: false} on 204). With STOP_AFTER
// the reader aborts the request after that many chunks, like a closed browser tab.
import { DefaultChatTransport, readUIMessageStream } from 'ai';

const [api, mode, chatId, question, stopAfter, partsJson] = process.argv.slice(2);
const transport = new DefaultChatTransport({ api });
const abort = new AbortController();

let stream;
if (mode === 'send') {
  const parts = [
    ...(question ? [{ type: 'text', text: question }] : []),
    ...(partsJson ? JSON.parse(partsJson) : []),
  ];
  const messages = [{ id: 'u1', role: 'user', parts }];
  stream = await transport.sendMessages({
    trigger: 'submit-message',
    chatId,
    messageId: undefined,
    messages,
    abortSignal: abort.signal,
  });
} else {
  stream = await transport.reconnectToStream({ chatId });
  if (stream === null) {
    process.stdout.write(JSON.stringify({ resumed: false }) + '\n');
    process.exit(0);
  }
  process.stderr.write('attached\n');
}

const chunks = [];
const limit = stopAfter ? Number(stopAfter) : Infinity;
const recorded = stream.pipeThrough(
  new TransformStream({
    transform(chunk, controller) {
      chunks.push(chunk);
      controller.enqueue(chunk);
      if (chunks.length >= limit) {
        controller.terminate();
        abort.abort();
      }
    },
  }),
);

const errors = [];
let message = null;
for await (const snapshot of readUIMessageStream({
  stream: recorded,
  onError: error => errors.push(String(error?.message ?? error)),
})) {
  message = snapshot;
}
process.stdout.write(JSON.stringify({ chunks, message, errors }) + '\n');
