"""Child process: one stack, a warm-up session, then timed sessions; prints their medians.

``python -m benchmarks._sessions --child STACK URL CHUNKS SESSIONS [TOOL_CALLS TOOL_SLEEP_MS
ASYNC_TOOL]``
"""

from __future__ import annotations

import sys

from benchmarks._harness import emit, medians
from benchmarks._stacks import make_session


def main(argv: list[str]) -> None:
    stack, url, chunks, sessions = argv[0], argv[1], int(argv[2]), int(argv[3])
    tool_calls = int(argv[4]) if len(argv) > 4 else 2
    tool_sleep_s = float(argv[5]) / 1000 if len(argv) > 5 else 0.0
    async_tool = len(argv) > 6 and argv[6] == "1"
    options = {"tool_calls": tool_calls}
    if stack != "httpx_sync_lines" and stack != "httpx_sync_read":
        options.update(tool_sleep_s=tool_sleep_s, async_tool=async_tool)
    session, close = make_session(stack, url, chunks, **options)
    try:
        session()  # warm-up: imports, pools, connections, lazy initialisation
        runs = [session() for _ in range(sessions)]
    finally:
        close()
    emit({"stack": stack, "chunks": chunks, "sessions": sessions, **medians(runs)})


if __name__ == "__main__":
    if sys.argv[1:2] != ["--child"]:
        sys.exit(__doc__)
    main(sys.argv[2:])
