"""RoundState: what one round (one model request) has seen so far, and what it has decided.

One instance per round, owned by that round's subscription. It is fed every chunk in order by
:func:`~rxreact.operators.process_chunk` and read once at the end by
:func:`~rxreact.operators.finish_round` and the agent.

The decision table (the first chunk carrying text or a tool call decides)::

    chunk carries                    mode before    mode after    emitted
    -------------------------------  -------------  ------------  ---------------------------
    role only / nothing / usage      any            unchanged     nothing
    reasoning                        any            unchanged     reasoning_delta
    text                             unknown        final_answer  round_mode_decided, text_delta
    text                             final_answer   final_answer  text_delta
    text                             tool_call      tool_call     nothing (kept as content)
    tool-call delta                  unknown        tool_call     round_mode_decided, tool events
    tool-call delta                  final_answer   tool_call     round_mode_decided, tool events
    tool-call delta (forced round)   any            unchanged     nothing (ignored)
    a model switch (FallbackModel)   any            unknown       model_switched, and when
                                                                  anything was emitted:
                                                                  round_restarted, round_started

A switch voids what the round saw of the model it leaves (text, tool calls, replay items: a
call cut half-way never runs and its id never reaches a request); only that model's usage is
kept, under its name (:meth:`RoundState.usage_by_model`).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from rxreact.events import (
    ModelSwitched,
    ReasoningDelta,
    RoundFinished,
    RoundModeDecided,
    RoundRestarted,
    RoundStarted,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStarted,
    delta_event,
)
from rxreact.messages import AssistantMessage, ReplayItem, ToolCall, Usage
from rxreact.model.assembly import ToolCallAssembler
from rxreact.model.chunks import ChatChunk
from rxreact.model.switch import ModelSwitch, SwitchChunk

__all__ = ["Mode", "RoundState"]


class Mode(Enum):
    """What a round is doing."""

    UNKNOWN = "unknown"  # no chunk with text or a tool call has arrived yet
    FINAL_ANSWER = "final_answer"  # the model is answering the user; text streams live
    TOOL_CALL = "tool_call"  # the model is calling tools; text is kept, not streamed


class RoundState:
    """Per-round state. Not thread-safe by design: one round's chunks arrive serialized."""

    __slots__ = (
        "_calls",
        "_reasoning",
        "_replay",
        "_spent",
        "_text",
        "finish_reason",
        "forced",
        "mode",
        "model",
        "pricer",
        "round",
        "usage",
    )

    def __init__(self, round_number: int, *, forced: bool = False) -> None:
        self.round: int = round_number
        """1-based number of the round in its run."""
        self.forced: bool = forced
        """True for the forced final round: tool calls are ignored."""
        self.mode: Mode = Mode.UNKNOWN
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self._text: list[str] = []
        # Made by the first chunk that needs them: most rounds have no reasoning, no replay
        # items and no tool calls, and a round lives as long as its stream (every garbage
        # collection walks what it holds, at thousands of concurrent runs).
        self._reasoning: list[str] | None = None
        self._replay: list[ReplayItem] | None = None
        self._calls: ToolCallAssembler | None = None
        self.model: str = ""
        """The name of the model answering the round (set by the run; a switch changes it)."""
        self._spent: dict[str, Usage] | None = None  # usage of models switched away from
        self.pricer: Callable[[str, Usage], Usage] | None = None
        """``pricer(model name, usage)``: the usage with its cost (set by the run)."""

    @property
    def first_chunk_processed(self) -> bool:
        """True once a chunk with text or a tool call decided the mode."""
        return self.mode is not Mode.UNKNOWN

    @property
    def text(self) -> str:
        """All text of the round so far."""
        return "".join(self._text)

    @property
    def reasoning(self) -> str:
        """All reasoning of the round so far."""
        return "" if self._reasoning is None else "".join(self._reasoning)

    def process(self, chunk: ChatChunk, emit: Callable[[Any], None]) -> None:
        """Take one chunk: update the state and ``emit`` the events it causes, in order."""
        number = self.round
        if chunk.reasoning:
            if self._reasoning is None:
                self._reasoning = []
            self._reasoning.append(chunk.reasoning)
            emit(delta_event(ReasoningDelta, number, chunk.reasoning))
        text = chunk.text
        if text:
            self._text.append(text)
            if self.mode is Mode.UNKNOWN:
                self.mode = Mode.FINAL_ANSWER
                emit(RoundModeDecided(round=number, mode="final_answer"))
            if self.mode is Mode.FINAL_ANSWER:
                # Neither validated (0.8 µs, more with every defaulted field) nor
                # model_construct (1.8 µs, its Python loop): see delta_event.
                emit(delta_event(TextDelta, number, text))
        if chunk.tool_calls and not self.forced:
            if self.mode is not Mode.TOOL_CALL:
                self.mode = Mode.TOOL_CALL
                emit(RoundModeDecided(round=number, mode="tool_call"))
            calls = self._calls
            if calls is None:
                # Synthesized ids carry the round: some providers reject a history with
                # repeated ids.
                calls = self._calls = ToolCallAssembler(id_prefix=f"call_r{number}_")
            for delta in chunk.tool_calls:
                update = calls.add(delta)
                if update.started:
                    emit(
                        ToolCallStarted(
                            round=number,
                            index=update.position,
                            call_id=update.id,
                            name=update.name or "",
                        )
                    )
                if update.arguments:
                    emit(
                        ToolCallArgsDelta(
                            round=number, index=update.position, delta=update.arguments
                        )
                    )
        if chunk.finish_reason is not None:
            self.finish_reason = chunk.finish_reason
        if chunk.usage is not None:
            self.usage = chunk.usage
        if chunk.replay:
            if type(chunk) is SwitchChunk:  # checked here: only replay chunks pay for it
                self._switch(chunk.switch, emit)
                return
            if self._replay is None:
                self._replay = []
            self._replay.extend(chunk.replay)

    def _switch(self, switch: ModelSwitch, emit: Callable[[Any], None]) -> None:
        """The stream moved to another model: keep the usage of the one it leaves, forget
        everything else it sent, and tell the subscriber (withdraw what it was shown)."""
        number = self.round
        spent = switch.usage if switch.usage is not None else self.usage
        if spent is not None:
            assert isinstance(spent, Usage)
            if self.pricer is not None:
                spent = self.pricer(switch.from_model, spent)
            earlier = self._spent if self._spent is not None else {}
            earlier[switch.from_model] = spent + earlier.get(switch.from_model)
            self._spent = earlier
        emit(
            ModelSwitched(
                round=number,
                from_model=switch.from_model,
                to_model=switch.to_model,
                reason=switch.reason,
            )
        )
        if self.mode is not Mode.UNKNOWN or self._reasoning is not None:
            reason = f"{switch.from_model} failed ({switch.reason}); {switch.to_model} answers"
            emit(RoundRestarted(round=number, reason=reason))
            emit(RoundStarted(round=number))
        self.model = switch.to_model
        self.mode = Mode.UNKNOWN
        self.finish_reason = None
        self.usage = None
        self._text = []
        self._reasoning = None
        self._replay = None
        self._calls = None

    def end_as_answer(self) -> None:
        """The round was stopped (by a budget): what it said is the answer, its tool calls
        (complete or cut) are dropped."""
        self.mode = Mode.FINAL_ANSWER
        self._calls = None

    def usage_by_model(self) -> dict[str, Usage]:
        """The round's usage by model: the one that answered, and any it switched away from."""
        spent = dict(self._spent) if self._spent is not None else {}
        if self.usage is not None:
            spent[self.model] = self.usage + spent.get(self.model)
        return spent

    @property
    def total_usage(self) -> Usage | None:
        """The usage of every model the round called (``usage`` is the answering one's)."""
        if self._spent is None:
            return self.usage
        total = self.usage
        for usage in self._spent.values():
            total = usage + total
        return total

    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The round's complete tool calls in call order (empty unless in tool-call mode)."""
        calls = self._calls
        return calls.calls() if calls is not None and self.mode is Mode.TOOL_CALL else ()

    def finished_event(self) -> RoundFinished:
        """The ``round_finished`` event describing this round."""
        mode = "tool_call" if self.mode is Mode.TOOL_CALL else "final_answer"
        if self.pricer is not None and self.usage is not None:
            self.usage = self.pricer(self.model, self.usage)
        return RoundFinished(
            round=self.round, mode=mode, finish_reason=self.finish_reason, usage=self.usage
        )

    def assistant_message(self, *, keep_reasoning: bool = True) -> AssistantMessage:
        """The assistant message this round adds to the history."""
        return AssistantMessage(
            content=self.text or None,
            tool_calls=self.tool_calls(),
            reasoning=(self.reasoning or None) if keep_reasoning else None,
            replay=() if self._replay is None else tuple(self._replay),
        )
