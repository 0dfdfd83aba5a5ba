"""The SQLite event log: :class:`SQLiteEventLog`, hot runs shared by the processes of one
machine in one file (the standard library's ``sqlite3``, no extra)."""

from rxreact.runs.sqlite.log import SQLiteEventLog

__all__ = ["SQLiteEventLog"]
