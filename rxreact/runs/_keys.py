"""The Redis keys of a :class:`~rxreact.runs.RedisEventLog`, all under its prefix."""

from __future__ import annotations

__all__ = ["Keys"]


class Keys:
    """Key names; see :mod:`rxreact.runs.redis` for what each holds."""

    __slots__ = ("cancels", "decisions", "prefix", "running")

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.cancels = f"{prefix}cancels"
        """The one stream of cancel requests every owning process reads."""
        self.decisions = f"{prefix}decisions"
        """The one stream of approval decisions every owning process reads."""
        self.running = f"{prefix}running"
        """The sorted set of runs begun and not ended (by start time): where lost runs are
        looked for."""

    def run(self, run_id: str) -> str:
        """The run's stream of entries."""
        return f"{self.prefix}run:{run_id}"

    def meta(self, run_id: str) -> str:
        """``running`` (kept alive by heartbeats) or ``ended``."""
        return f"{self.prefix}run:{run_id}:meta"

    def checkpoints(self, run_id: str) -> str:
        """The hash of the run's checkpoints: field n holds checkpoint n (JSON)."""
        return f"{self.prefix}run:{run_id}:ckpt"

    def decided(self, run_id: str) -> str:
        """The hash of the run's approval decisions, by call id (the first one wins)."""
        return f"{self.prefix}run:{run_id}:decided"

    def owner(self, run_id: str) -> str:
        """The run's lease: a hash of owner, token (fencing), conversation, state, info."""
        return f"{self.prefix}run:{run_id}:owner"

    def active(self, conversation_id: str) -> str:
        """The sorted set of the runs started on a conversation."""
        return f"{self.prefix}active:{conversation_id}"

    def wake(self, hub_id: str) -> str:
        """A reader's private wake stream."""
        return f"{self.prefix}wake:{hub_id}"
