"""The tables of a :class:`~rxreact.runs.postgres.PostgresEventLog`, and its SQL.

Tables (every name starts with the log's ``table_prefix``)::

    runs         one row per run: its conversation, its owner and fencing token (one more
                 for every new owner), state running / parked / ended / lost, the owner's
                 last beat and ``lapse`` (the beat plus the owner's lost_after), ``went_on``
                 (when it last began, resumed or unparked), a parked run's deadline and
                 ``woken`` (decided since it parked), and ``due_at``: when a claim may take
                 it (generated from those; NULL for a parked run nothing wakes, and for
                 ended runs), indexed, so a claim reads only the runs that are due
    entries      the run's entries, keyed (run_id, seq): kind "e" holds the events up to seq
                 written since the previous entry (a JSON array, as in Redis and SQLite),
                 kind "end" the end marker at last seq + 1
    checkpoints  the run's finished steps (never shown to subscribers), keyed (run_id, n)
    decisions    approval decisions, one per (run, call): the first wins
    cancels      cancel requests, read by every owning process from the last id it saw

Times are the database's clock (``clock_timestamp()``), which every host shares; only a
parked run's approval deadline is the owner's wall clock (``time.time()``), as
:class:`~rxreact.runs.takeover.LostRun` carries it. Commits that readers in other
processes must see are announced with ``pg_notify`` on the channel ``{prefix}runs``.
"""

from __future__ import annotations

__all__ = ["CREATE", "MIGRATIONS", "SCHEMA_VERSION", "SQL", "TABLES"]

SCHEMA_VERSION = 1
"""The version of the tables below, in ``{prefix}schema`` (component ``event_log``)."""

TABLES = ("runs", "entries", "checkpoints", "decisions", "cancels")

CREATE = (
    """CREATE TABLE {p}runs (
    run_id text PRIMARY KEY,
    conversation_id text,
    owner text,
    token bigint NOT NULL DEFAULT 1,
    state text NOT NULL,
    started timestamptz NOT NULL DEFAULT clock_timestamp(),
    beat timestamptz NOT NULL DEFAULT clock_timestamp(),
    lapse timestamptz NOT NULL,
    went_on timestamptz NOT NULL DEFAULT clock_timestamp(),
    deadline double precision,
    woken boolean NOT NULL DEFAULT false,
    ended_at timestamptz,
    info text,
    due_at timestamptz GENERATED ALWAYS AS (CASE
        WHEN state = 'running' OR (state = 'parked' AND woken) THEN lapse
        WHEN state = 'parked' AND deadline IS NOT NULL THEN GREATEST(lapse, to_timestamp(deadline))
        END) STORED
)""",
    "CREATE INDEX {p}runs_active ON {p}runs (conversation_id, started) "
    "WHERE state IN ('running', 'parked')",
    "CREATE INDEX {p}runs_due ON {p}runs (due_at) WHERE due_at IS NOT NULL",
    "CREATE INDEX {p}runs_ended ON {p}runs (ended_at) WHERE state IN ('ended', 'lost')",
    "CREATE TABLE {p}entries (run_id text NOT NULL, seq integer NOT NULL, kind text NOT NULL, "
    "body bytea NOT NULL, PRIMARY KEY (run_id, seq))",
    "CREATE TABLE {p}checkpoints (run_id text NOT NULL, n integer NOT NULL, "
    "seq integer NOT NULL, body bytea NOT NULL, PRIMARY KEY (run_id, n))",
    "CREATE TABLE {p}decisions (id bigserial PRIMARY KEY, run_id text NOT NULL, "
    "call_id text NOT NULL, approved boolean NOT NULL, reason text, "
    "at timestamptz NOT NULL DEFAULT clock_timestamp(), UNIQUE (run_id, call_id))",
    "CREATE TABLE {p}cancels (id bigserial PRIMARY KEY, run_id text NOT NULL, "
    "at timestamptz NOT NULL DEFAULT clock_timestamp())",
)

MIGRATIONS: dict[int, tuple[str, ...]] = {}
"""Statements that take the tables from version N to N + 1, by N."""

_SECS = "make_interval(secs => %s)"
_NOW = "clock_timestamp()"
# In a condition an index must serve: clock_timestamp() is volatile, so Postgres cannot use it
# as an index bound and filters every entry of the index instead (100,000 parked runs with a
# deadline cost a claim tick 80 ms that way); the statement's start is stable.
_THEN = "statement_timestamp()"

SQL = {
    # -- the owner ----------------------------------------------------------------------------
    "begin": "INSERT INTO {p}runs (run_id, conversation_id, owner, token, state, lapse) "
    f"VALUES (%s, %s, %s, 1, 'running', {_NOW} + {_SECS})",
    "lock": "SELECT run_id, owner, token FROM {p}runs WHERE run_id = ANY(%s) "
    "ORDER BY run_id FOR UPDATE",
    "entries": "INSERT INTO {p}entries (run_id, seq, kind, body) "
    "SELECT * FROM unnest(%s::text[], %s::integer[], %s::text[], %s::bytea[]) "
    "ON CONFLICT DO NOTHING",
    "checkpoints": "INSERT INTO {p}checkpoints (run_id, n, seq, body) "
    "SELECT * FROM unnest(%s::text[], %s::integer[], %s::integer[], %s::bytea[]) "
    "ON CONFLICT DO NOTHING",
    # A decision made since the run last went on wakes it at once (decide() and the park
    # lock the row in turn, so one of the two sees the other).
    "park": "UPDATE {p}runs r SET state = 'parked', deadline = %s, woken = EXISTS ("
    "SELECT 1 FROM {p}decisions d WHERE d.run_id = r.run_id AND d.at >= r.went_on) "
    "WHERE run_id = %s AND state = 'running'",
    "unpark": f"UPDATE {{p}}runs SET state = 'running', deadline = NULL, woken = false, "
    f"went_on = {_NOW}, beat = {_NOW}, lapse = {_NOW} + {_SECS} "
    "WHERE run_id = %s AND state = 'parked'",
    "end": f"UPDATE {{p}}runs SET state = 'ended', ended_at = {_NOW} WHERE run_id = %s",
    "notify": "SELECT pg_notify(%s, 'e:' || run_id) FROM unnest(%s::text[]) AS run_id",
    "lock_beats": "SELECT 1 FROM {p}runs WHERE run_id = ANY(%s) ORDER BY run_id FOR UPDATE",
    "beat": f"UPDATE {{p}}runs r SET beat = {_NOW}, lapse = {_NOW} + {_SECS} "
    "FROM unnest(%s::text[], %s::bigint[]) AS o(run_id, token) WHERE r.run_id = o.run_id "
    "AND r.owner = %s AND r.token = o.token AND r.state IN ('running', 'parked')",
    "let_go": "UPDATE {p}runs r SET lapse = '-infinity' "
    "FROM unnest(%s::text[], %s::bigint[]) AS o(run_id, token) WHERE r.run_id = o.run_id "
    "AND r.owner = %s AND r.token = o.token AND r.state = 'parked'",
    # -- retention, in bounded batches ----------------------------------------------------------
    "expired": "DELETE FROM {p}runs WHERE run_id IN (SELECT run_id FROM {p}runs "
    f"WHERE state IN ('ended', 'lost') AND ended_at < {_THEN} - {_SECS} ORDER BY ended_at "
    "LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING run_id",
    "expire_entries": "DELETE FROM {p}entries WHERE run_id = ANY(%s)",
    "expire_checkpoints": "DELETE FROM {p}checkpoints WHERE run_id = ANY(%s)",
    "expire_decisions": "DELETE FROM {p}decisions WHERE run_id = ANY(%s)",
    "expire_cancels": "DELETE FROM {p}cancels WHERE id IN (SELECT id FROM {p}cancels "
    f"WHERE at < {_NOW} - interval '1 hour' ORDER BY id LIMIT %s)",
    # -- takeover ---------------------------------------------------------------------------
    "due": f"SELECT 1 FROM {{p}}runs WHERE due_at <= {_THEN} LIMIT 1",
    "claimable": "SELECT run_id, conversation_id, token, state, deadline FROM {p}runs "
    f"WHERE due_at <= {_THEN} ORDER BY due_at LIMIT %s FOR UPDATE SKIP LOCKED",
    "claim": f"UPDATE {{p}}runs SET owner = %s, token = token + 1, beat = {_NOW}, "
    f"lapse = {_NOW} + {_SECS}, went_on = {_NOW} WHERE run_id = ANY(%s)",
    "give_up": f"UPDATE {{p}}runs SET state = 'lost', info = %s, ended_at = {_NOW} "
    "WHERE run_id = %s AND token = %s",
    "run_decisions": "SELECT call_id, approved, reason FROM {p}decisions WHERE run_id = %s",
    "run_checkpoints": "SELECT n, body FROM {p}checkpoints WHERE run_id = %s ORDER BY n",
    "run_events": "SELECT seq, body FROM {p}entries WHERE run_id = %s AND kind = 'e' ORDER BY seq",
    # -- decisions and cancels --------------------------------------------------------------
    "run_state": "SELECT state FROM {p}runs WHERE run_id = %s FOR UPDATE",
    "decide": "INSERT INTO {p}decisions (run_id, call_id, approved, reason) "
    "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
    "wake": "UPDATE {p}runs SET woken = true WHERE run_id = %s AND state = 'parked'",
    "cancel": "INSERT INTO {p}cancels (run_id) VALUES (%s)",
    "notify_one": "SELECT pg_notify(%s, %s)",
    # -- readers ------------------------------------------------------------------------------
    "active": "SELECT run_id FROM {p}runs WHERE conversation_id = %s AND (state = 'parked' "
    f"OR (state = 'running' AND lapse > {_NOW})) ORDER BY started, run_id LIMIT 1",
    "last_ids": "SELECT (SELECT COALESCE(MAX(id), 0) FROM {p}cancels), "
    "(SELECT COALESCE(MAX(id), 0) FROM {p}decisions)",
    # Cancels and decisions since the last ids seen, less a margin: ids are taken in
    # insertion order but committed in any order, so one committed late is read late.
    "notices": "SELECT 'c', id, run_id, NULL, NULL, NULL FROM {p}cancels WHERE id > %s "
    "UNION ALL SELECT 'd', id, run_id, call_id, approved, reason FROM {p}decisions "
    "WHERE id > %s ORDER BY 1, 2",
    "follow": "SELECT f.run_id, e.seq, e.kind, e.body FROM unnest(%s::text[], %s::integer[]) "
    "AS f(run_id, after) CROSS JOIN LATERAL (SELECT seq, kind, body FROM {p}entries e "
    "WHERE e.run_id = f.run_id AND e.seq > f.after ORDER BY seq LIMIT %s) e "
    "ORDER BY f.run_id, e.seq",
    "alive": f"SELECT run_id, state, beat < {_NOW} - {_SECS}, info FROM {{p}}runs "
    "WHERE run_id = ANY(%s)",
}
"""Every statement of the log, with ``{p}`` for the table prefix."""
