"""The events of a typed answer as it forms (``output_type``; re-exported by
:mod:`rxreact.events`)."""

from __future__ import annotations

from typing import Any, Literal

from rxreact.events._base import _Event

__all__ = ["OutputPartial", "OutputReset"]


class OutputPartial(_Event):
    """The typed answer parsed so far, from the answering round's text.

    Sent when it changed (not for every chunk); never from a round that calls tools. A value
    once shown only grows: strings by their end, lists and objects by new items; numbers,
    booleans and ``null`` show once complete, fields once their value begins. The last one
    may still be incomplete: ``final_answer.output`` is the validated object.
    """

    type: Literal["output_partial"] = "output_partial"
    output: Any
    """The JSON value parsed so far (for a pydantic ``output_type``, a ``dict``)."""


class OutputReset(_Event):
    """The partials of round ``round`` are withdrawn: its draft was rejected (it is not of
    the output type, or the judge said no) and a new round answers again, starting from
    ``{}``; or the round turned out to call tools."""

    type: Literal["output_reset"] = "output_reset"
    reason: str
    """Why (the rejection's feedback)."""
