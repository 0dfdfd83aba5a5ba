"""A case's ``inputs`` in a dataset file: the question, and the conversation before it.

::

    inputs: What is the weather in Paris?            the question
    inputs: [Describe this, {type: image, url: https://...}]
                                                     the question as parts
    inputs:                                          the question after earlier turns
      question: And tomorrow?
      history:
      - {role: user, content: Weather in Paris?}
      - [assistant, Sunny, 21 °C.]                   a [role, text] pair

pydantic-evals passes ``inputs`` to the task as they are; an rxreact agent takes a question,
so a mapping holds exactly ``question`` and ``history`` (another key is an error, not dropped).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from rxreact._validate import described
from rxreact.evals._case import Case
from rxreact.evals.errors import DatasetError
from rxreact.messages import AssistantMessage, Message, SystemMessage, UserMessage
from rxreact.messages.parts import ContentPart, File, Image, Text

__all__ = ["first_error", "inputs_data", "plain", "read_inputs"]

_INPUT_KEYS = ("question", "history")
_PART = TypeAdapter(ContentPart)
_ROLES: dict[str, type[UserMessage | AssistantMessage | SystemMessage]] = {
    "user": UserMessage,
    "assistant": AssistantMessage,
    "system": SystemMessage,
}


def read_inputs(raw: Any, *, path: str, case: str) -> tuple[Any, list[Message]]:
    """A case's ``inputs``: the question (a string, or a list of parts), or a mapping with the
    ``question`` and the conversation's ``history`` before it."""
    if isinstance(raw, str):
        return raw, []
    if isinstance(raw, list):
        return _question(raw, path=path, case=case, field="inputs"), []
    if not isinstance(raw, Mapping):
        raise DatasetError(
            f"must be the question (a string or a list of parts) or a mapping with question "
            f"and history, got {described(raw)}",
            path=path,
            case=case,
            field="inputs",
        )
    for key in raw:
        if key not in _INPUT_KEYS:
            raise DatasetError(
                "unknown key: inputs as a mapping holds question and history",
                path=path,
                case=case,
                field=f"inputs.{key}",
            )
    if "question" not in raw:
        raise DatasetError(
            "inputs as a mapping needs its question", path=path, case=case, field="inputs.question"
        )
    question = _question(raw["question"], path=path, case=case, field="inputs.question")
    return question, _history(raw.get("history") or [], path=path, case=case)


def _question(raw: Any, *, path: str, case: str, field: str) -> Any:
    if isinstance(raw, str):
        return raw
    if not isinstance(raw, list) or not raw:
        raise DatasetError(
            f"must be a string or a list of parts, got {described(raw)}",
            path=path,
            case=case,
            field=field,
        )
    parts: list[Any] = []
    for i, item in enumerate(raw):
        if isinstance(item, str):
            parts.append(item)
            continue
        try:
            parts.append(_PART.validate_python(item))
        except ValidationError as error:
            raise DatasetError(
                f"a part is a string or {{type: text|image|file, ...}}: {first_error(error)}",
                path=path,
                case=case,
                field=f"{field}[{i}]",
            ) from None
    return parts


def _history(raw: Any, *, path: str, case: str) -> list[Message]:
    if not isinstance(raw, list):
        raise DatasetError(
            f"must be a list of messages, got {described(raw)}",
            path=path,
            case=case,
            field="inputs.history",
        )
    messages: list[Message] = []
    for i, item in enumerate(raw):
        field = f"inputs.history[{i}]"
        if isinstance(item, list) and len(item) == 2:  # a [role, text] pair
            item = {"role": item[0], "content": item[1]}
        role = item.get("role") if isinstance(item, Mapping) else None
        if role not in _ROLES:
            raise DatasetError(
                f"a message is {{role: user|assistant|system, content: ...}} or a [role, text] "
                f"pair, got {described(item)}",
                path=path,
                case=case,
                field=field,
            )
        try:
            messages.append(_ROLES[role].model_validate(item))
        except ValidationError as error:
            raise DatasetError(first_error(error), path=path, case=case, field=field) from None
    return messages


def inputs_data(case: Case) -> Any:
    """The ``inputs`` a file holds for ``case``: its question alone when it has no history."""
    question = plain(case.question)
    if not case.history:
        return question
    return {"question": question, "history": [_message(m) for m in case.history]}


def _message(message: Message) -> dict[str, Any]:
    # The role always, then what is not at its default (a plain turn is role and content).
    return {"role": message.role, **message.model_dump(mode="json", exclude_defaults=True)}


def plain(value: Any) -> Any:
    """A question, metadata or expected output as JSON values (parts and models as dicts)."""
    if isinstance(value, Text | Image | File):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def first_error(error: ValidationError) -> str:
    """The first problem pydantic found, where it is and what."""
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])
