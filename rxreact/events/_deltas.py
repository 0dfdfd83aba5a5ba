"""The two per-chunk events, :class:`TextDelta` and :class:`ReasoningDelta`, and
:func:`delta_event`, which builds them without validation (re-exported by :mod:`rxreact.events`).

They are the events a run emits once per streamed chunk, so they sit with the constructor that
keeps that path cheap.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from rxreact.events._base import _Event

__all__ = ["ReasoningDelta", "TextDelta", "delta_event", "unvalidated"]


class ReasoningDelta(_Event):
    """A piece of the model's reasoning (never answer text, never decides the mode)."""

    type: Literal["reasoning_delta"] = "reasoning_delta"
    delta: str


class TextDelta(_Event):
    """A piece of text the model wrote, streamed live.

    In a ``final_answer`` round this is the answer. Text a round writes before it turns out to be
    a tool round (a sentence, then a call) is also sent as it arrives: the UI saw it live.
    """

    type: Literal["text_delta"] = "text_delta"
    delta: str


_D = TypeVar("_D", TextDelta, ReasoningDelta)
_defaults: dict[type[Any], tuple[dict[str, Any], frozenset[str]]] = {}
_new = object.__new__
_set = object.__setattr__


def delta_event(cls: type[_D], round: int, delta: str) -> _D:
    """``cls(round=round, delta=delta)`` for the two per-chunk events, built the way pydantic's
    ``model_construct`` builds a model (``__dict__``, the fields set, no extra, no private)
    without its Python loop over every field's default.

    Why: these are built once per streamed chunk. Validated construction costs about 60 ns
    more per defaulted field (``seq``, ``agent``, ``path``, ``type``), ``model_construct``
    more still; here the defaults are one dict copy. ``round`` and ``delta`` come from
    rxreact's own parser (an ``int`` and a ``str``), so there is nothing to validate; the
    result is equal, field for field, to the validated one (``tests/test_events_fast.py``).
    """
    return unvalidated(cls, round, "delta", delta)


_E = TypeVar("_E", bound=_Event)


def unvalidated(cls: type[_E], round: int, name: str, value: Any) -> _E:
    """``cls(round=round, **{name: value})`` built as :func:`delta_event` builds its events:
    for an event made once per chunk from rxreact's own values (``name`` is always the same
    field of ``cls``)."""
    made = _defaults.get(cls)
    if made is None:  # every field in its declared order, as validation would put them
        fields = frozenset(("round", name))
        defaults = {
            field: None if field in fields else info.default
            for field, info in cls.model_fields.items()
        }
        made = _defaults[cls] = (defaults, fields)
    defaults, fields = made
    values = dict(defaults)
    values["round"] = round
    values[name] = value
    event = _new(cls)
    _set(event, "__dict__", values)
    _set(event, "__pydantic_fields_set__", set(fields))
    _set(event, "__pydantic_extra__", None)
    _set(event, "__pydantic_private__", None)
    return event
