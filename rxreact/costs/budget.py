"""``Budget``: the most a run, or a conversation, may spend; and what one run has spent.

While a round streams, its **projected** cost is checked against what is left: the input
tokens (estimated from the request until the provider reports them) and the output tokens as
they stream (about four characters a token until reported), at the answering model's prices
(:mod:`rxreact.costs.prices`). Crossing the limit stops the round at once (the stream
disposed, its socket closed) and ends the run with :class:`~rxreact.BudgetExceededError`,
or, with ``on_exceed="final_answer"``, with the answer streamed so far as the final answer,
``budget_exceeded=True`` on it (tool calls of the stopped round are dropped, never run).

A per-conversation budget counts what every run of the conversation spent: the spend is kept
in the chat memory (``memory.spend(conversation_id)``), so a new agent object on the same memory
sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from rxreact.costs.prices import cost_of
from rxreact.errors import ConfigurationError, InvalidArgumentError
from rxreact.messages import ChatRequest, Usage

__all__ = ["Budget", "RoundPrices", "Spend", "estimate_input_tokens"]


@dataclass(frozen=True)
class Budget:
    """The most a run or a conversation may spend.

    Args:
        usd: the limit in USD.
        per: ``"run"`` (each run on its own) or ``"conversation"`` (every run of it, kept in
            the chat memory).
        on_exceed: ``"error"`` (:class:`~rxreact.BudgetExceededError`) or ``"final_answer"``
            (the text so far, marked ``budget_exceeded``).
    """

    usd: float
    per: Literal["run", "conversation"] = "run"
    on_exceed: Literal["error", "final_answer"] = "error"

    def __post_init__(self) -> None:
        if isinstance(self.usd, bool) or not isinstance(self.usd, int | float) or self.usd < 0:
            raise InvalidArgumentError(f"Budget.usd must be a non-negative number: {self.usd!r}")
        if self.per not in ("run", "conversation"):
            raise InvalidArgumentError(f"Budget.per is 'run' or 'conversation': {self.per!r}")
        if self.on_exceed not in ("error", "final_answer"):
            raise InvalidArgumentError(
                f"Budget.on_exceed is 'error' or 'final_answer': {self.on_exceed!r}"
            )


_MILLION = 1_000_000
_CHARS_PER_TOKEN = 4


class RoundPrices:
    """One model's prices for one request: the cost of its input, and of each output token."""

    __slots__ = ("input_cost", "input_tokens", "per_input_token", "per_output_token")

    def __init__(self, model: Any, label: str, input_tokens: int) -> None:
        per_input = cost_of(Usage(prompt_tokens=_MILLION, completion_tokens=0), model)
        per_output = cost_of(Usage(prompt_tokens=0, completion_tokens=_MILLION), model)
        if per_input is None or per_output is None:
            raise ConfigurationError(
                f"a budget needs the price of {label}: none is known (install rxreact[prices] "
                "or rxreact.costs.prices.register_price it)"
            )
        self.per_input_token: float = per_input / _MILLION
        self.per_output_token: float = per_output / _MILLION
        self.input_tokens: int = input_tokens
        self.input_cost: float = input_tokens * self.per_input_token

    def projected(self, output_chars: int, usage: Usage | None) -> float:
        """The request's cost so far: reported counts where there are, else estimates."""
        input_cost = self.input_cost
        output_tokens = output_chars / _CHARS_PER_TOKEN
        if usage is not None:
            if usage.prompt_tokens is not None:
                input_cost = usage.prompt_tokens * self.per_input_token
            if usage.completion_tokens:
                output_tokens = max(output_tokens, usage.completion_tokens)
        return input_cost + output_tokens * self.per_output_token


class Spend:
    """What one run may still spend: its budget, what was spent before it (a conversation's
    earlier runs), and where a conversation's spend is kept."""

    def __init__(self, budget: Budget, memory: Any, conversation_id: str | None) -> None:
        self.budget = budget
        self._memory = memory if budget.per == "conversation" else None
        self._conversation = conversation_id
        if self._memory is not None:
            if conversation_id is None:
                raise ConfigurationError("a per-conversation budget needs a conversation_id")
            if not callable(getattr(self._memory, "spend", None)):
                raise ConfigurationError(
                    f"a per-conversation budget needs a chat memory that keeps spend: "
                    f"{type(memory).__name__} does not"
                )
        self.before: float = 0.0
        self.cut = False
        """Set when a round was stopped by the budget (``on_exceed="final_answer"``)."""

    def load(self) -> None:
        """Read what the conversation spent before this run (once its history is loaded)."""
        if self._memory is not None:
            self.before = float(self._memory.spend(self._conversation))

    def left(self, run_cost: float) -> float:
        """USD the next round may spend, after ``run_cost`` spent by this run so far."""
        return self.budget.usd - self.before - run_cost

    def record(self, usd: float) -> None:
        """Keep ``usd`` more spent by this run (in the memory, for a conversation)."""
        if self._memory is not None and usd > 0:
            self._memory.add_spend(self._conversation, usd)


def estimate_input_tokens(request: ChatRequest) -> int:
    """The request's input tokens, estimated (the context budget's counter)."""
    from rxreact.context._token_counter import TokenCounter

    if not _COUNTER:
        _COUNTER.append(TokenCounter(None))
    counter = _COUNTER[0]
    messages = sum(counter.message(m, 1.0) for m in request.messages)
    return int(messages + counter.tools(request.tools, 1.0))


_COUNTER: list[Any] = []  # one counter for the process, made on first use
