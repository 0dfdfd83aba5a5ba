"""The Redis event log's room: :class:`RedisEventLog` (``log``) and its parts, the keys
(``_keys``), the fenced writes (``_fence``, ``_writes``), the claims (``_takeover``) and the
readers (``_hub``, ``_reader``)."""

from rxreact.runs.redis.log import RedisEventLog

__all__ = ["RedisEventLog"]
