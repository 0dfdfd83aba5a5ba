"""The Postgres event log (``rxreact[postgres]``): :class:`PostgresEventLog`.

psycopg is imported when a log is constructed, so importing this package needs no extra.
"""

from rxreact.runs.postgres.log import PostgresEventLog

__all__ = ["PostgresEventLog"]
