""":class:`Case`: one question to put to an agent, with what its answer should be."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rxreact._validate import check_question, described
from rxreact.errors import InvalidArgumentError
from rxreact.evals.errors import DatasetError
from rxreact.evals.evaluators._base import Evaluator
from rxreact.messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage

__all__ = ["Case"]

_MESSAGE_TYPES = (UserMessage, AssistantMessage, SystemMessage, ToolMessage)
_ROLES = {"user": UserMessage, "assistant": AssistantMessage, "system": SystemMessage}


class Case:
    """One case of a dataset: a question, the conversation before it, the expected answer.

    ::

        Case("paris", "Weather in Paris?", expected="sunny",
             history=[("user", "Hi"), ("assistant", "Hello! Ask me about the weather.")],
             evaluators=[Contains("sunny")])

    Args:
        name: unique within its dataset; names the case in reports and recordings.
        question: a ``str``, or a list of parts (``str``, ``Text``, ``Image``, ``File``).
        expected: the expected answer (a ``str``) or typed output, for ``EqualsExpected``
            and judges.
        history: earlier turns: messages (``UserMessage``, ``AssistantMessage``...) or
            ``(role, text)`` pairs. Each run starts a fresh conversation holding them.
        metadata: anything to keep with the case (tags, difficulty); reported as is.
        evaluators: evaluators for this case only, after the dataset's.

    Raises:
        DatasetError: a question, history item or evaluator that cannot be used (the message
            names the case and the field).
    """

    __slots__ = ("evaluators", "expected", "history", "metadata", "name", "question")

    def __init__(
        self,
        name: str,
        question: Any,
        *,
        expected: Any = None,
        history: Sequence[Message | tuple[str, str]] = (),
        metadata: Mapping[str, Any] = {},
        evaluators: Sequence[Any] = (),
    ) -> None:
        if not isinstance(name, str) or not name:
            raise DatasetError(f"a case's name must be a non-empty str, got {described(name)}")
        try:
            check_question(question)
        except InvalidArgumentError as error:
            raise DatasetError(str(error), case=name, field="question") from None
        self.name: str = name
        self.question: Any = question if isinstance(question, str) else tuple(question)
        self.expected: Any = expected
        self.history: tuple[Message, ...] = _history(name, history)
        if not isinstance(metadata, Mapping):
            raise DatasetError(
                f"metadata must be a mapping, got {described(metadata)}",
                case=name,
                field="metadata",
            )
        self.metadata: dict[str, Any] = dict(metadata)
        self.evaluators: tuple[Any, ...] = check_evaluators(evaluators, case=name)

    def __repr__(self) -> str:
        return f"Case({self.name!r}, {self.question!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Case):
            return NotImplemented
        return all(getattr(self, slot) == getattr(other, slot) for slot in self.__slots__)

    __hash__: ClassVar[None] = None  # type: ignore[assignment]  # mutable metadata inside


def _history(case: str, items: Sequence[Any]) -> tuple[Message, ...]:
    if isinstance(items, str) or not isinstance(items, Sequence):
        raise DatasetError(
            f"history must be a sequence of messages or (role, text) pairs, got {described(items)}",
            case=case,
            field="history",
        )
    messages: list[Message] = []
    for i, item in enumerate(items):
        if isinstance(item, _MESSAGE_TYPES):
            messages.append(item)
            continue
        if (
            isinstance(item, Sequence)
            and not isinstance(item, str)
            and len(item) == 2
            and item[0] in _ROLES
            and isinstance(item[1], str)
        ):
            messages.append(_ROLES[item[0]](content=item[1]))
            continue
        raise DatasetError(
            f"must be a message or a (role, text) pair with role 'user', 'assistant' or "
            f"'system', got {described(item)}",
            case=case,
            field=f"history[{i}]",
        )
    return tuple(messages)


def check_evaluators(evaluators: Any, *, case: str | None = None) -> tuple[Any, ...]:
    """``evaluators`` as a tuple, each an ``Evaluator`` or a callable."""
    if isinstance(evaluators, str) or not isinstance(evaluators, Sequence):
        raise DatasetError(
            f"evaluators must be a sequence, got {described(evaluators)}",
            case=case,
            field="evaluators",
        )
    for i, evaluator in enumerate(evaluators):
        if isinstance(evaluator, type) and issubclass(evaluator, Evaluator):
            raise DatasetError(
                f"{evaluator.__name__} is a class: write {evaluator.__name__}(...)",
                case=case,
                field=f"evaluators[{i}]",
            )
        if not callable(evaluator):
            raise DatasetError(
                f"an evaluator must be an Evaluator or a function of the context, got "
                f"{described(evaluator)}",
                case=case,
                field=f"evaluators[{i}]",
            )
    return tuple(evaluators)
