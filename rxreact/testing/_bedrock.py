"""Bedrock's Converse API as the mock speaks it: ``POST /model/{modelId}/converse-stream`` (AWS's
binary event stream) and ``/model/{modelId}/converse`` (a whole answer), chosen by the path.

A scripted reply's chunks become Converse events, each one event-stream frame (with its CRCs):
``messageStart``, text as ``contentBlockDelta`` text, reasoning as ``reasoningContent`` deltas
closed with a signature the mock checks when the block comes back, each tool call a
``contentBlockStart`` (its ``toolUseId`` and name) and ``toolUse`` input deltas, then
``messageStop`` and ``metadata`` (the usage). A :class:`~rxreact.model.scripted.replies.Fail`
is an exception frame named after the error's status (``throttlingException`` for a 429...).

Signatures: a request signed with SigV4 is checked against :data:`MOCK_CREDENTIALS` (an
unknown key id is 403 ``UnrecognizedClientException``, a wrong signature 403
``InvalidSignatureException``, as AWS answers); an unsigned request or one with a bearer token
is accepted, as the other dialects accept any key. The requests it refuses:
:mod:`rxreact.testing._bedrock_request`.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote

from rxreact.messages import ChatRequest, Usage
from rxreact.model.assembly import assemble
from rxreact.model.bedrock.wire import ConverseStreamParser
from rxreact.model.chunks import ChatChunk, ModelResponse
from rxreact.model.http.eventstream import EventStreamDecoder, encode_frame
from rxreact.testing._bedrock_request import decode_request, request_problem, sign_reasoning
from rxreact.testing._wire import error_object, status_of

__all__ = ["BEDROCK_STREAM", "BEDROCK_WHOLE", "MOCK_CREDENTIALS"]

MOCK_CREDENTIALS = {"AKIAMOCKBEDROCK00001": "mock-bedrock-secret-key"}
"""The access keys whose SigV4 signatures the mock checks (key id → secret)."""

_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
_EXCEPTIONS = {
    429: "throttlingException",
    503: "serviceUnavailableException",
    500: "internalServerException",
    400: "validationException",
}
_CREDENTIAL = re.compile(
    r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
    r"SignedHeaders=([^,]+), Signature=([0-9a-f]+)"
)


def _frame(event_type: str, payload: dict[str, Any]) -> bytes:
    headers = {
        ":event-type": event_type,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return encode_frame(headers, json.dumps(payload, separators=(",", ":")).encode())


def _usage(usage: Usage | None) -> dict[str, Any]:
    prompt = (usage.prompt_tokens if usage else None) or 0
    completion = (usage.completion_tokens if usage else None) or 0
    return {"inputTokens": prompt, "outputTokens": completion, "totalTokens": prompt + completion}


class _ConverseWriter:
    """One streamed answer: a frame per event, blocks indexed as they open."""

    def __init__(self, model: str, number: int) -> None:
        self._index = -1
        self._open: str | None = None
        self._reasoning: list[str] = []
        self._calls: dict[int | None, int] = {}
        self._number = number
        self._stop: str | None = None
        self._usage: Usage | None = None
        self._started = False

    def start(self) -> list[bytes]:
        return []  # messageStart comes with the first output, as the model begins

    def _begin(self) -> list[bytes]:
        if self._started:
            return []
        self._started = True
        return [_frame("messageStart", {"role": "assistant"})]

    def chunk(self, chunk: ChatChunk) -> list[bytes]:
        out = self._begin()
        if chunk.reasoning:
            self._ensure(out, "reasoning")
            self._reasoning.append(chunk.reasoning)
            out.append(self._delta({"reasoningContent": {"text": chunk.reasoning}}))
        if chunk.text:
            self._ensure(out, "text")
            out.append(self._delta({"text": chunk.text}))
        for delta in chunk.tool_calls:
            if delta.index not in self._calls or delta.id:
                self._close(out)
                self._index += 1
                self._open = "toolUse"
                self._calls[delta.index] = self._index
                call_id = delta.id or f"tooluse_mock_{self._number}_{self._index}"
                start = {"toolUse": {"toolUseId": call_id, "name": delta.name}}
                out.append(
                    _frame("contentBlockStart", {"contentBlockIndex": self._index, "start": start})
                )
            if delta.arguments:
                piece = {"toolUse": {"input": delta.arguments}}
                out.append(self._delta(piece, self._calls[delta.index]))
        if chunk.usage is not None:
            self._usage = chunk.usage
        if chunk.finish_reason is not None:
            self._close(out)
            self._stop = _STOP.get(chunk.finish_reason, "content_filtered")
            out.append(_frame("messageStop", {"stopReason": self._stop}))
        return out

    def fail(self, error: Exception) -> list[bytes]:
        kind = _EXCEPTIONS.get(status_of(error), "modelStreamErrorException")
        payload = json.dumps({"message": error_object(error)["message"]}).encode()
        headers = {
            ":exception-type": kind,
            ":content-type": "application/json",
            ":message-type": "exception",
        }
        return [encode_frame(headers, payload)]

    def end(self) -> list[bytes]:
        out = self._begin()
        if self._stop is None:
            self._close(out)
            out.append(_frame("messageStop", {"stopReason": "end_turn"}))
        out.append(_frame("metadata", {"usage": _usage(self._usage), "metrics": {"latencyMs": 1}}))
        return out

    def _ensure(self, out: list[bytes], kind: str) -> None:
        if self._open != kind:
            self._close(out)
            self._index += 1
            self._open = kind

    def _close(self, out: list[bytes]) -> None:
        if self._open is None:
            return
        if self._open == "reasoning":
            signature = sign_reasoning("".join(self._reasoning))
            out.append(self._delta({"reasoningContent": {"signature": signature}}))
            self._reasoning = []
        out.append(_frame("contentBlockStop", {"contentBlockIndex": self._index}))
        self._open = None

    def _delta(self, delta: dict[str, Any], index: int | None = None) -> bytes:
        at = self._index if index is None else index
        return _frame("contentBlockDelta", {"contentBlockIndex": at, "delta": delta})


class _ConverseStream:
    """``POST /model/{modelId}/converse-stream``."""

    path = "/converse-stream"
    streams = True
    content_type = "application/vnd.amazon.eventstream"

    def kind(self, body: dict[str, Any], path: str) -> tuple[bool, str]:
        model = path.split("?", 1)[0].split("/model/", 1)[-1].rsplit("/", 1)[0]
        return self.streams, unquote(model) or "mock-model"

    def decode(self, body: dict[str, Any]) -> ChatRequest:
        return decode_request(body)

    def problem(self, body: dict[str, Any]) -> str | None:
        return request_problem(body)

    def refuse(
        self, path: str, headers: dict[str, str], raw: bytes, host: str
    ) -> tuple[int, str] | None:
        """403 for a SigV4 signature AWS would refuse (module docstring)."""
        return _signature_problem(path, headers, raw, host)

    def writer(self, model: str, number: int) -> _ConverseWriter:
        return _ConverseWriter(model, number)

    def response(self, response: ModelResponse, model: str, number: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if response.reasoning:
            text = {"text": response.reasoning, "signature": sign_reasoning(response.reasoning)}
            content.append({"reasoningContent": {"reasoningText": text}})
        if response.content:
            content.append({"text": response.content})
        for i, call in enumerate(response.tool_calls):
            arguments = json.loads(call.arguments) if call.arguments.strip() else {}
            use = {
                "toolUseId": call.id or f"tooluse_mock_{number}_{i}",
                "name": call.name,
                "input": arguments,
            }
            content.append({"toolUse": use})
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": _STOP.get(response.finish_reason or "stop", "end_turn"),
            "usage": _usage(response.usage),
            "metrics": {"latencyMs": 1},
        }

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return {"message": message}

    def assemble(self, data: bytes) -> ModelResponse:
        decoder, parser, chunks = EventStreamDecoder(), ConverseStreamParser(), []
        for event in decoder.feed(data):
            chunk = parser.parse(event.data, event.event)
            if chunk is not None:
                chunks.append(chunk)
        return assemble(chunks)


class _ConverseWhole(_ConverseStream):
    """``POST /model/{modelId}/converse``."""

    path = "/converse"
    streams = False


def _signature_problem(
    path: str, headers: dict[str, str], raw: bytes, host: str
) -> tuple[int, str] | None:
    authorization = headers.get("authorization", "")
    if not authorization.startswith("AWS4-HMAC-SHA256"):
        return None  # unsigned, or a bearer token
    match = _CREDENTIAL.fullmatch(authorization.strip())
    if match is None:
        return 403, "Authorization header requires 'Credential', 'SignedHeaders', 'Signature'."
    key_id, _, region, service, signed, signature = match.groups()
    secret = MOCK_CREDENTIALS.get(key_id)
    if secret is None:
        return 403, "The security token included in the request is invalid."
    try:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
    except ImportError:  # pragma: no cover - the check needs botocore, as signing does
        return None
    names = signed.split(";")
    request = AWSRequest(
        method="POST",
        url=f"http://{headers.get('host', host)}{path}",
        data=raw,
        headers={name: headers.get(name, "") for name in names if name != "host"},
    )
    request.context["timestamp"] = headers.get("x-amz-date", "")
    token = headers.get("x-amz-security-token")
    auth = SigV4Auth(Credentials(key_id, secret, token), service, region)
    expected = auth.signature(
        auth.string_to_sign(request, auth.canonical_request(request)), request
    )
    if expected != signature:
        return 403, (
            "The request signature we calculated does not match the signature you provided. "
            "Check your AWS Secret Access Key and signing method."
        )
    return None


BEDROCK_STREAM = _ConverseStream()
"""Bedrock's streamed answers (base URL ``server.origin``)."""
BEDROCK_WHOLE = _ConverseWhole()
"""Bedrock's whole answers."""
