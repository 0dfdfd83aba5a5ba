"""The agent: :class:`ReactAgent` and the steps of one run.

- :mod:`~rxreact.agent.react_agent`: :class:`ReactAgent`, its options, and ``stream()`` (a
  run as a cold Observable of events); :mod:`~rxreact.agent._views` the blocking and asyncio
  views of it (``run``, ``call``, ``iter``, ``arun``...);
- :mod:`~rxreact.agent.run_loop`: one run, step by step (memory, the rounds, the judge, the
  forced last round, committing the turn);
- :mod:`~rxreact.agent.round`: :class:`RoundState`, what one model response decides while its
  chunks arrive (answer or tool calls).
"""

from rxreact.agent.react_agent import FORCED_FINAL_INSTRUCTION, AgentResult, ReactAgent

__all__ = ["FORCED_FINAL_INSTRUCTION", "AgentResult", "ReactAgent"]
