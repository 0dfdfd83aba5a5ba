"""``LLMJudge``: a model scores the answer against a rubric (a score in [0, 1] and a reason).

::

    judge request:  [system: rubric instructions, user: question? + expected? + answer]
                    response_format json_schema {score: number, reason: string}
    judge reply:    {"score": 0.8, "reason": "Names the city and the temperature."}

The request goes through rxreact's own judge machinery (:mod:`rxreact.checks.judge`): one
non-streamed, structured request that every adapter encodes (OpenAI, Responses, Anthropic),
asked once more on a reply that is not the object. Its usage is reported apart from the
agent's. This is the *evaluator*; :class:`rxreact.LLMJudge` is the run's judge phase.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rxreact.evals.evaluators._base import EvalResult, Evaluator

if TYPE_CHECKING:
    from rxreact.evals._context import EvalContext
    from rxreact.model.base import ChatModel

__all__ = ["LLMJudge"]

RUBRIC_INSTRUCTIONS = (
    "You grade an AI assistant's answer against a rubric. Reply with only a JSON object "
    '{"score": <a number from 0 to 1>, "reason": "<one or two sentences>"}: 1 when the answer '
    "fully meets the rubric, 0 when it does not at all.\n\nRubric:\n"
)

_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "grade",
        "schema": {
            "type": "object",
            "properties": {"score": {"type": "number"}, "reason": {"type": "string"}},
            "required": ["score", "reason"],
            "additionalProperties": False,
        },
    },
}

_models_lock = threading.Lock()


@dataclass(frozen=True)
class LLMJudge(Evaluator):
    """A model grades the answer against ``rubric``; the run fails it below ``threshold``.

    Args:
        rubric: what a good answer does, in words.
        model: the judging model: a ``ChatModel``, a ``"provider:model"`` string, or ``None``
            for ``OpenAIChatModel()`` configured from the environment.
        include_question: show the judge the case's question.
        include_expected: show the judge the case's expected answer.
        threshold: the score from which the run passes.
    """

    rubric: str
    model: Any = field(default=None, kw_only=True)
    include_question: bool = field(default=True, kw_only=True)
    include_expected: bool = field(default=False, kw_only=True)
    threshold: float = field(default=0.5, kw_only=True)

    blocking = True

    def judging_model(self) -> ChatModel:
        """The model requests go to (made once per judge from a string or the environment)."""
        from rxreact.model.base import ChatModel

        if isinstance(self.model, ChatModel):
            return self.model
        with _models_lock:
            made = self.__dict__.get("_made")
            if made is None:
                from rxreact.model.spec import model_from

                if self.model is None:
                    from rxreact.model.openai.client import OpenAIChatModel

                    made = OpenAIChatModel()
                else:
                    made = model_from(self.model)
                object.__setattr__(self, "_made", made)
            return made

    def prompt(self, ctx: EvalContext) -> str:
        """The user message of the judge's request."""
        from rxreact.messages._labels import content_label

        parts = []
        if self.include_question:
            question = ctx.case.question
            parts.append(
                f"Question:\n{question if isinstance(question, str) else content_label(question)}"
            )
        if self.include_expected and ctx.case.expected is not None:
            parts.append(f"Expected answer:\n{ctx.case.expected}")
        parts.append(f"Answer:\n{ctx.answer}")
        return "\n\n".join(parts)

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Score the answer with the judging model against ``rubric`` (0 with no answer)."""
        from rxreact.checks.judge import structured_reply

        if ctx.answer is None:
            return EvalResult(0.0, "no answer: the run failed", threshold=self.threshold)
        grade, usage = structured_reply(
            self.judging_model(),
            RUBRIC_INSTRUCTIONS + self.rubric,
            self.prompt(ctx),
            _SCHEMA,
            _parse_grade,
            '{"score": <0..1>, "reason": "<string>"}',
        )
        score, reason = grade
        return EvalResult(score, reason, threshold=self.threshold, usage=usage)


def _parse_grade(value: Any) -> tuple[float, str] | None:
    if not isinstance(value, dict):
        return None
    score, reason = value.get("score"), value.get("reason", "")
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        return None
    return float(score), reason if isinstance(reason, str) else ""
