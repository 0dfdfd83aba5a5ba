"""The request bodies the chat endpoints accept (what ``useChat`` sends) and their errors."""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rxreact import _validate
from rxreact.errors import InvalidArgumentError

__all__ = [
    "ApprovalBody",
    "ChatBody",
    "HTTPProblem",
    "UIPart",
    "check_conversation_id",
    "check_run_id",
    "message_too_long",
    "parse_approval_body",
    "parse_chat_body",
    "problem_body",
]

_RUN_ID = re.compile(r"[A-Za-z0-9_.:-]{1,200}")


class HTTPProblem(Exception):
    """A request the server refuses: answered as JSON ``{"error": ..., "detail": ...}``."""

    def __init__(
        self, status: int, error: str, detail: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail
        self.headers: dict[str, str] = headers or {}


OPENAI_PATHS = "/v1/"
"""Where errors take OpenAI's shape: the OpenAI-compatible endpoint's routes."""

_OPENAI_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    429: "rate_limit_error",
}


def problem_body(problem: HTTPProblem, path: str) -> dict[str, Any]:
    """The JSON of a refused request: ``{"error": code, "detail": text}``, or under ``/v1/``
    OpenAI's ``{"error": {"message", "type", "param", "code"}}`` (what its SDKs read the
    message from)."""
    if not path.startswith(OPENAI_PATHS):
        return {"error": problem.error, "detail": problem.detail}
    status = problem.status
    kind = _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    error = {"message": problem.detail, "type": kind, "param": None, "code": problem.error}
    return {"error": error}


class UIPart(BaseModel):
    """A part of a ``UIMessage``: ``text``, or a ``file`` (``mediaType``, ``url``, ``filename``);
    the rest of its fields are kept as sent."""

    model_config = ConfigDict(extra="allow", frozen=True)

    type: str
    text: str | None = None
    url: str | None = None
    mediaType: str | None = None
    filename: str | None = None


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    id: str | None = None
    role: str
    parts: list[UIPart] = Field(default_factory=list)


class ChatBody(BaseModel):
    """``POST /api/chat``: the chat id and its messages with ``parts`` (extra fields ignored)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str
    """The conversation (``useChat``'s chat id)."""
    messages: list[_Message] = Field(min_length=1)


def check_conversation_id(value: str) -> str:
    """``value`` if it is a usable conversation id (the rule of ``ReactAgent.stream``, one
    function for both), else a 400 problem."""
    try:
        return _validate.check_conversation_id(value)
    except InvalidArgumentError as error:
        raise HTTPProblem(400, "invalid_conversation_id", str(error)) from None


def check_run_id(value: str) -> str:
    """``value`` if it can be a run id (rxreact makes them hex), else a 400 problem."""
    if not _RUN_ID.fullmatch(value):
        raise HTTPProblem(400, "invalid_run_id", "a run id is 1-200 of A-Z a-z 0-9 _ . : -")
    return value


def message_too_long(limit: int) -> HTTPProblem:
    """The answer to a question over ``limit`` characters (``create_app(max_message_chars)``)."""
    return HTTPProblem(413, "message_too_long", f"the message is over {limit} characters")


def parse_chat_body(raw: bytes) -> ChatBody:
    """Validate a ``POST /api/chat`` body: 400 for bad JSON, 422 for the wrong shape."""
    body = _validated(ChatBody, raw)
    check_conversation_id(body.id)
    return body


class ApprovalBody(BaseModel):
    """``POST /api/chat/{id}/approve``: the AI SDK's tool approval response, as JSON."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    approvalId: str
    approved: bool
    reason: str | None = None


def parse_approval_body(raw: bytes) -> tuple[str, bool, str | None]:
    """``(approval id, approved, reason)`` of an approval body: 400 for bad JSON, 422 else."""
    body = _validated(ApprovalBody, raw)
    return body.approvalId, body.approved, body.reason


_Body = TypeVar("_Body", bound=BaseModel)


def _validated(model: type[_Body], raw: bytes) -> _Body:
    """``raw`` as a ``model``: 400 for bad JSON, 422 for the wrong shape."""
    try:
        return model.model_validate_json(raw)
    except ValidationError as error:
        if any(e["type"] == "json_invalid" for e in error.errors()):
            raise HTTPProblem(400, "malformed_json", "the body is not valid JSON") from None
        raise HTTPProblem(422, "invalid_body", _summary(error.errors())) from None


def _summary(errors: list[Any]) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in errors[:5]
    )
