"""``AgentResult``: what a finished run produced."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from rxreact.events import UsagePurpose
from rxreact.messages import Message, Usage

__all__ = ["AgentResult"]


class AgentResult(BaseModel):
    """What a finished run produced (``ReactAgent.run``); equal to its ``final_answer`` event."""

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="forbid")

    answer: str
    """The text of the final round."""
    rounds: int
    """Model requests made, the forced one included."""
    forced: bool
    """True when the answer came from the forced round after ``max_rounds``."""
    messages: tuple[Message, ...]
    """The turn the run added to the conversation: the question, every tool round (assistant
    message and tool results in call order) and the final answer."""
    usage: Usage | None
    """Usage summed over every request of the run (rounds, judge, summary)."""
    usage_by_purpose: dict[UsagePurpose, Usage] = Field(default_factory=dict)
    """``usage`` split by what the requests were for (see ``FinalAnswer.usage_by_purpose``)."""
    usage_by_agent: dict[str, Usage] = Field(default_factory=dict)
    """``usage`` split by agent name, agents run as tools included
    (see ``FinalAnswer.usage_by_agent``)."""
    usage_by_model: dict[str, Usage] = Field(default_factory=dict)
    """The rounds' usage split by the model called (see ``FinalAnswer.usage_by_model``)."""
    budget_exceeded: bool = False
    """True when the budget cut the answer (see ``FinalAnswer.budget_exceeded``)."""
    validated: bool | None = None
    """The verdict on the answer (``FinalAnswer.validated``)."""
    output: Any = None
    """With ``output_type``: the answer parsed into it, ``None`` if it never validated."""

    def _repr_html_(self) -> str:
        """A compact card in Jupyter: the answer, rounds and tokens, the messages folded."""
        from rxreact.marbles._html import result_html

        return result_html(self)
