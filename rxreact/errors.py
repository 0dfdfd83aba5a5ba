"""The one exception tree of rxreact.

Every failure that reaches a subscriber's ``on_error`` (or is raised by a blocking
call such as ``agent.call``) is an instance of :class:`RxReactError`::

    RxReactError
    ├── ConfigurationError            bad or missing settings (no API key, no model name)
    ├── InvalidArgumentError          an argument of the wrong type or value (also a TypeError
    │   │                             and a ValueError, so either ``except`` catches it)
    │   └── ToolDefinitionError       a function that cannot become a tool
    ├── ToolSourceError               a tool source (an MCP server) cannot be reached or listed
    ├── ModelError                    anything that went wrong talking to the model
    │   ├── ModelHTTPError            the endpoint answered with an HTTP error status
    │   │   ├── BadRequestError           400 / 422
    │   │   ├── AuthenticationError       401 / 403
    │   │   ├── NotFoundError             404
    │   │   ├── RateLimitError            429 (carries ``retry_after``)
    │   │   └── ServerError               5xx (carries ``retry_after``)
    │   ├── ProviderStreamError       the provider sent an error inside the SSE stream
    │   ├── StreamProtocolError       bytes that are not a chat-completions stream
    │   ├── StreamInterruptedError    the stream ended without [DONE] and without finish_reason
    │   ├── ResponseTooLargeError     past a size cap (an SSE line, a response's tool arguments)
    │   ├── ModelConnectionError      could not connect / the connection broke
    │   ├── ModelTimeoutError         connect, first-chunk or between-chunk timeout
    │   ├── ContentBlockedError       the provider blocked the prompt or the answer (not retried)
    │   └── CircuitOpenError          every model of a FallbackModel is skipped by its breaker
    ├── AgentError                    the agent loop itself could not go on
    │   ├── ToolErrorBudgetExceededError  too many failed tool calls in one run
    │   ├── JudgeError                the judge could not reach a verdict
    │   ├── OutputValidationError     no draft was of the requested ``output_type``
    │   ├── GuardrailTrippedError     an input or output guardrail tripped
    │   ├── MaxHandoffsExceededError  agents handed one turn over more than ``max_handoffs``
    │   ├── RunStalledError           no event for longer than ``stall_timeout``
    │   └── BudgetExceededError       the run's (or conversation's) spend crossed its budget
    ├── ChatMemoryError               a memory backend failed
    ├── RunError                      a hot run (``agent.start``) could not be followed to its end
    │   ├── RunCancelledError             cancelled (``run.cancel()``, ``request_cancel``)
    │   ├── RunNotFoundError              not in the event log (never started, or expired)
    │   ├── RunLostError                  the process that owned it stopped before it ended
    │   └── ApprovalDecisionError         a decision for a call that does not wait for one
    ├── ConversationBusyError         another run holds the conversation (rejected, waited too
    │                                 long, or this run's lease was lost before its commit)
    └── TooManyRunsError              a user already has as many runs in flight as a server
                                      allows (``rxreact serve``: 429)

Foreign exceptions (httpx, json, pydantic) are mapped to this tree in exactly one place
per layer (``rxreact.model.http._errors.transport_error`` for HTTP), and never carry the
API key: messages are built from our own fields, not from request reprs.

The tree is one module on purpose, long as it is: it reads as the tree above, and an
``except`` clause never has to know which room raised.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AgentError",
    "ApprovalDecisionError",
    "AuthenticationError",
    "BadRequestError",
    "BudgetExceededError",
    "ChatMemoryError",
    "CircuitOpenError",
    "ConfigurationError",
    "ContentBlockedError",
    "ConversationBusyError",
    "GuardrailTrippedError",
    "InvalidArgumentError",
    "JudgeError",
    "MaxHandoffsExceededError",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelTimeoutError",
    "NotFoundError",
    "OutputValidationError",
    "ProviderStreamError",
    "RateLimitError",
    "ResponseTooLargeError",
    "RunCancelledError",
    "RunError",
    "RunLostError",
    "RunNotFoundError",
    "RunStalledError",
    "RxReactError",
    "ServerError",
    "StreamInterruptedError",
    "StreamProtocolError",
    "TooManyRunsError",
    "ToolDefinitionError",
    "ToolErrorBudgetExceededError",
    "ToolSourceError",
    "http_error_for_status",
]


class RxReactError(Exception):
    """Base class of every error rxreact raises or sends through ``on_error``."""


class ConfigurationError(RxReactError):
    """A required setting is missing or invalid (e.g. no API key, no model name)."""


class InvalidArgumentError(RxReactError, TypeError, ValueError):
    """An argument has the wrong type or value (``ReactAgent(None)``, ``max_rounds=0``, a question
    that is not a string). The message names the parameter.

    Also a ``TypeError`` and a ``ValueError``: code that catches the built-in kind still works.
    """


class ToolDefinitionError(InvalidArgumentError):
    """A callable cannot be turned into a tool (unsupported signature, name, parameter type...)."""


class ToolSourceError(RxReactError):
    """A tool source (an MCP server) could not be started, reached or listed."""


class ModelError(RxReactError):
    """Talking to the model failed."""

    #: True when the failure may go away on a retry of the same request.
    retryable: bool = False


class ModelHTTPError(ModelError):
    """The endpoint answered with an HTTP error status.

    Attributes:
        status_code: the HTTP status.
        provider_message: the provider's own error message, taken from the body.
        body: the response body as text (truncated), for diagnostics.
        retry_after: seconds the provider asked us to wait (``Retry-After``), when it said;
            read on the statuses that are retried (429 and 5xx).
    """

    def __init__(
        self,
        status_code: int,
        provider_message: str,
        body: str = "",
        retry_after: float | None = None,
    ) -> None:
        self.status_code = status_code
        self.provider_message = provider_message
        self.body = body
        self.retry_after = retry_after
        super().__init__(f"HTTP {status_code}: {provider_message}")


class BadRequestError(ModelHTTPError):
    """HTTP 400 / 422: the provider rejected the request."""


class AuthenticationError(ModelHTTPError):
    """HTTP 401 / 403: missing, wrong or unauthorised API key."""


class NotFoundError(ModelHTTPError):
    """HTTP 404: wrong base URL or unknown model."""


class RateLimitError(ModelHTTPError):
    """HTTP 429: rate limited (``retry_after``: seconds the provider asked us to wait)."""

    retryable = True


class ServerError(ModelHTTPError):
    """HTTP 5xx: the provider failed (retryable, except 501 Not Implemented; ``retry_after``:
    set when it said when to come back, as a 503 often does)."""

    retryable = True


class ProviderStreamError(ModelError):
    """The provider reported an error inside the event stream.

    Attributes:
        provider_message: the provider's message.
        code: the provider's error code, if any (str or int as sent).
        error_type: the provider's error type, if any.
        payload: the whole error object as sent.
        usage: the usage the provider sent with the error (a :class:`~rxreact.messages.Usage`;
            OpenRouter bills a stream cut by an error and says so in the error chunk), or
            ``None``.
    """

    def __init__(
        self,
        provider_message: str,
        code: Any = None,
        error_type: str | None = None,
        payload: dict[str, Any] | None = None,
        usage: Any = None,
    ) -> None:
        self.provider_message = provider_message
        self.code = code
        self.error_type = error_type
        self.payload: dict[str, Any] = payload or {}
        self.usage = usage
        detail = f" ({code})" if code is not None else ""
        super().__init__(f"provider error in stream{detail}: {provider_message}")


class StreamProtocolError(ModelError):
    """The response is not a valid chat-completions event stream (bad JSON, wrong shape)."""


class StreamInterruptedError(ModelError):
    """The stream ended without ``[DONE]`` and without any ``finish_reason``: a cut connection."""

    retryable = True


class ResponseTooLargeError(ModelError):
    """The response went past a size cap of the model (see :mod:`rxreact.model.http.limits`): one
    SSE line, or the tool-call arguments of one response. The stream is closed at once, so a
    runaway response costs at most the cap in memory, and nothing of it is stored.

    Attributes:
        what: ``"sse_line"`` or ``"tool_arguments"``.
        limit: the cap that was passed (bytes for a line, characters for arguments).
    """

    def __init__(self, what: str, limit: int) -> None:
        self.what = what
        self.limit = limit
        unit = "bytes" if what == "sse_line" else "characters"
        super().__init__(f"{what.replace('_', ' ')} longer than the limit of {limit} {unit}")


class ModelConnectionError(ModelError):
    """Could not connect to the endpoint, or the connection broke."""

    retryable = True


class ModelTimeoutError(ModelError):
    """A configured timeout elapsed.

    Attributes:
        phase: ``"connect"``, ``"first_chunk"`` or ``"between_chunks"``.
        seconds: the limit that elapsed.
    """

    def __init__(self, phase: str, seconds: float) -> None:
        self.phase = phase
        self.seconds = seconds
        super().__init__(f"{phase.replace('_', ' ')} timeout after {seconds:g} s")


class ContentBlockedError(ModelError):
    """The provider blocked the prompt or the answer (Gemini's ``SAFETY``, ``RECITATION``, a
    prompt blocked in ``promptFeedback``). Not retried: the same request is blocked again.

    Attributes:
        reason: the provider's reason (``"SAFETY"``, ``"RECITATION"``, ``"PROHIBITED_CONTENT"``...).
        blocked: ``"prompt"`` (refused before any answer) or ``"answer"`` (stopped mid-answer).
        provider_message: the provider's own message, when it sent one.
        payload: what the provider sent about it (safety ratings, prompt feedback).
    """

    def __init__(
        self,
        reason: str,
        blocked: str = "answer",
        provider_message: str = "",
        payload: dict[str, Any] | None = None,
    ) -> None:
        self.reason = reason
        self.blocked = blocked
        self.provider_message = provider_message
        self.payload: dict[str, Any] = payload or {}
        detail = f": {provider_message}" if provider_message else ""
        super().__init__(f"the provider blocked the {blocked} ({reason}){detail}")


class AgentError(RxReactError):
    """The agent loop could not go on."""


class ToolErrorBudgetExceededError(AgentError):
    """More failed tool calls in one run than ``ReactAgent(max_tool_errors=...)`` allows."""


class JudgeError(AgentError):
    """The judge could not reach a verdict (it raised, its request failed, or its reply was not
    the JSON object asked for, twice). Ends the run only with ``on_judge_error="raise"``.

    Attributes:
        usage: what the judge's requests used before it failed, when known.
    """

    def __init__(self, message: str, usage: Any = None) -> None:
        super().__init__(message)
        self.usage = usage


class OutputValidationError(AgentError):
    """A typed run (``output_type=...``) ended without an answer of that type: the last draft
    still failed validation when ``ReactAgent(max_revisions=...)`` ran out. The run stored
    nothing.

    Attributes:
        draft: the last draft answer, as the model wrote it.
        errors: pydantic's validation errors of that draft, each a dict with ``type``,
            ``loc`` and ``msg`` (``"json_invalid"`` when it was not JSON at all).
    """

    def __init__(self, message: str, draft: str = "", errors: Any = ()) -> None:
        super().__init__(message)
        self.draft = draft
        self.errors: list[dict[str, Any]] = list(errors)


class GuardrailTrippedError(AgentError):
    """A guardrail (``ReactAgent(input_guardrails=..., output_guardrails=...)``) tripped: the
    run ended there, its model stream closed, its running tools' tokens set, nothing stored.

    Attributes:
        guardrail: the guardrail's name (its function's ``__name__``).
        reason: what it said (``GuardrailResult.reason``).
        kind: ``"input"`` (the question) or ``"output"`` (the answer as it streamed).
    """

    def __init__(self, guardrail: str, reason: str, kind: str = "input") -> None:
        self.guardrail = guardrail
        self.reason = reason
        self.kind = kind
        super().__init__(f"{kind} guardrail {guardrail!r} tripped: {reason}")


class MaxHandoffsExceededError(AgentError):
    """A turn was handed from agent to agent more times than the first agent's
    ``ReactAgent(max_handoffs=...)`` allows (agents passing a question around in a loop)."""


class RunStalledError(AgentError):
    """A run delivered no event for longer than ``ReactAgent(stall_timeout=...)``.

    The run's own timeouts (model, tools) normally end it long before; this is the safety net
    that turns a run that would otherwise wait forever into an error.
    """


class BudgetExceededError(AgentError):
    """The projected cost of a run (or of its conversation) crossed its
    :class:`~rxreact.Budget` while a round streamed: the round was stopped at once.

    Attributes:
        spent: USD spent, the stopped round's projected cost included (for a per-conversation
            budget, the conversation's spend).
        limit: the budget's ``usd``.
        per: ``"run"`` or ``"conversation"``.
    """

    def __init__(self, spent: float, limit: float, per: str) -> None:
        self.spent = spent
        self.limit = limit
        self.per = per
        super().__init__(f"the {per}'s spend of ${spent:.6f} crossed its budget of ${limit:g}")


class ChatMemoryError(RxReactError):
    """A chat-memory backend failed to load or store a conversation."""


class RunError(RxReactError):
    """A hot run could not be followed to its end (see :mod:`rxreact.runs`)."""


class RunCancelledError(RunError):
    """The run was cancelled before it finished; it wrote nothing to memory."""


class RunNotFoundError(RunError):
    """The event log has no run with this id: it never started, or its retention ran out."""


class ApprovalDecisionError(RunError):
    """``event_log.decide(...)`` for a tool call that does not wait for approval: unknown in
    the run, decided already (the first decision wins), or its run ended."""


class RunLostError(RunError):
    """The process that owned the run stopped (killed, crashed) before the run ended."""


class ConversationBusyError(RxReactError):
    """Another run holds the conversation, so this run cannot start or cannot commit.

    Raised through ``on_error`` of a run whose conversation is busy when
    ``ReactAgent(on_busy="reject")``, whose wait passed ``busy_timeout`` with
    ``on_busy="queue"``, or whose lease expired or was taken over before its turn was
    committed (fencing). In every case the run wrote nothing to memory.

    Attributes:
        conversation_id: the conversation that was busy (``None`` when rebuilt from its message
            alone, as after pickling).
    """

    def __init__(self, message: str, conversation_id: str | None = None) -> None:
        self.conversation_id = conversation_id
        super().__init__(message)


class TooManyRunsError(RxReactError):
    """A user already has as many runs in flight as the server allows
    (``create_app(max_runs_per_user=...)``); answered ``429`` with ``Retry-After``."""


class CircuitOpenError(ModelError):
    """Every model of a :class:`~rxreact.FallbackModel` is skipped by its circuit breaker (open,
    or half-open with its one probe already out): the request fails at once, sent nowhere.

    Attributes:
        states: each model's name and its breaker's state, in chain order.
    """

    def __init__(self, states: dict[str, str]) -> None:
        self.states: dict[str, str] = dict(states)
        listed = ", ".join(f"{name}: {state}" for name, state in self.states.items())
        super().__init__(f"every model's circuit breaker is open ({listed})")


def http_error_for_status(
    status_code: int, provider_message: str, body: str = "", retry_after: float | None = None
) -> ModelHTTPError:
    """The :class:`ModelHTTPError` subclass for an HTTP status (the one place that maps them)."""
    cls: type[ModelHTTPError]
    if status_code == 429:
        cls = RateLimitError
    elif status_code >= 500:
        cls = ServerError
    elif status_code in (400, 422):
        cls = BadRequestError
    elif status_code in (401, 403):
        cls = AuthenticationError
    elif status_code == 404:
        cls = NotFoundError
    else:
        cls = ModelHTTPError
    error = cls(status_code, provider_message, body, retry_after)
    if status_code == 501:
        error.retryable = False  # "Not Implemented" stays so: the wrong kind of server
    return error
