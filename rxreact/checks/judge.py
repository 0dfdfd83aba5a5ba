"""Judges: what decides whether a draft answer answers the question (the seed's VALIDATING phase).

A judge is any callable ``judge(question, draft, history) -> Verdict`` — a plain function, an
``async def``, or one returning an ``Observable`` whose last value is the verdict.
:class:`LLMJudge` is the seed's: one short, non-streamed request in JSON mode::

    judge request:  [system: instructions, user: question + draft]   response_format json_object
    judge reply:    {"passed": false, "feedback": "It does not say which city."}

Give it to ``ReactAgent(..., judge=...)``; the agent runs it on its tools scheduler (a sync
judge may block there), after every draft answer.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict
from reactivex import Observable

from rxreact.errors import ConfigurationError, JudgeError, RxReactError
from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    Usage,
    UserMessage,
)
from rxreact.model.base import ChatModel

__all__ = ["JUDGE_INSTRUCTIONS", "Judge", "LLMJudge", "Verdict", "structured_reply"]

JUDGE_INSTRUCTIONS = (
    "You review a draft answer to a user's question. Decide whether the draft answers the "
    "question correctly, completely and directly. Reply with only a JSON object of the form "
    '{"passed": true or false, "feedback": "..."}. When it does not pass, say in "feedback" '
    "what is wrong or missing, so the writer can fix it; when it passes, feedback may be empty."
)
"""The default instructions of :class:`LLMJudge` (its system message)."""


class Verdict(BaseModel):
    """A judge's decision on one draft answer."""

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="forbid")

    passed: bool
    """True when the draft may stand as the answer."""
    feedback: str = ""
    """Why it failed (the model reads it before it revises), or a remark."""
    usage: Usage | None = None
    """What the judge's own model requests used (summed into the run's usage as ``judge``)."""


Judge: TypeAlias = Callable[
    [str, str, Sequence[Message]], "Verdict | Awaitable[Verdict] | Observable[Verdict]"
]
"""``judge(question, draft, history)``: ``history`` is the conversation the draft answers (the
loaded history and this turn so far), without the draft itself."""


class LLMJudge:
    """The seed's judge: one non-streamed request in JSON mode, ``{"passed", "feedback"}`` back.

    Args:
        model: the model that judges; ``None``: the agent's model.
        instructions: its system message (default :data:`JUDGE_INSTRUCTIONS`).

    The request carries ``response_format: {"type": "json_object"}`` and the model's own default
    ``options``, not the run's. A reply that is not that object is asked for once more;
    a second bad reply, or a failed request, raises :class:`~rxreact.JudgeError`.
    """

    def __init__(self, model: ChatModel | None = None, instructions: str | None = None) -> None:
        self.model: ChatModel | None = model
        """The judging model; ``None``: the agent's."""
        self.instructions: str = instructions or JUDGE_INSTRUCTIONS
        """The judge's system message."""

    def __repr__(self) -> str:
        return f"LLMJudge(model={self.model!r})"

    def with_model(self, model: ChatModel) -> LLMJudge:
        """This judge on ``model`` when it has none of its own (the agent calls this)."""
        return self if self.model is not None else LLMJudge(model, self.instructions)

    def __call__(self, question: str, draft: str, history: Sequence[Message]) -> Verdict:
        """Judge ``draft`` (blocking: the agent calls it on its tools scheduler).

        Raises:
            JudgeError: the request failed or the reply was not the JSON object, twice.
        """
        if self.model is None:
            raise ConfigurationError("LLMJudge has no model: pass LLMJudge(model=...)")
        verdict, usage = structured_reply(
            self.model,
            self.instructions,
            f"Question:\n{question}\n\nDraft answer:\n{draft}",
            {"type": "json_object"},
            _parse,
            '{"passed": <true|false>, "feedback": "<string>"}',
        )
        return Verdict(passed=verdict[0], feedback=verdict[1], usage=usage)


_T = TypeVar("_T")


def structured_reply(
    model: ChatModel,
    instructions: str,
    prompt: str,
    response_format: dict[str, Any],
    parse: Callable[[Any], _T | None],
    shape: str,
) -> tuple[_T, Usage | None]:
    """One judge-style exchange: a non-streamed request in structured-output mode, its JSON
    reply parsed by ``parse`` (``None``: not the object), asked once more when it is not.

    The judge phase (:class:`LLMJudge`) and the evals' ``LLMJudge`` evaluator both ask this
    way; every adapter encodes ``response_format`` (``json_object`` or ``json_schema``) in its
    own API's terms. Returns the parsed value and the usage of both attempts.

    Raises:
        JudgeError: the request failed, or the reply was not the object (``shape``) twice.
    """
    messages: list[Message] = [
        SystemMessage(content=instructions),
        UserMessage(content=prompt),
    ]
    usage: Usage | None = None
    for attempt in range(2):
        request = ChatRequest(
            messages=tuple(messages), options={"response_format": response_format}
        )
        try:
            response = model.complete(request)
        except RxReactError as error:
            raise JudgeError(f"the judge's request failed: {error}", usage) from error
        usage = response.usage + usage if response.usage is not None else usage
        parsed = parse(_json(response.content))
        if parsed is not None:
            return parsed, usage
        if attempt == 0:
            messages += [
                AssistantMessage(content=response.content or ""),
                UserMessage(
                    content=f"That was not the JSON object asked for. Reply with only {shape}."
                ),
            ]
    raise JudgeError(
        f"the judge's reply is not a {shape} JSON object: {response.content!r}",
        usage,
    )


def _json(content: str | None) -> Any:
    """The reply's JSON value, ``None`` when it is not JSON."""
    try:
        return json.loads(content or "")
    except ValueError:
        return None


def _parse(value: Any) -> tuple[bool, str] | None:
    """``(passed, feedback)`` from the judge's reply, or ``None`` when it is not that object."""
    if not isinstance(value, dict) or not isinstance(value.get("passed"), bool):
        return None
    feedback = value.get("feedback")
    return value["passed"], feedback if isinstance(feedback, str) else ""
