"""A process owning one run of a RedisEventLog, for tests/test_redis_fence.py.

``python fence_child.py REDIS_URL LOST_AFTER``: begin a run, print its id, then obey stdin
line by line: ``write N`` appends event N and a checkpoint, flushes, and prints
``written N <whether the checkpoint was written>``; ``end`` ends the run, flushes and prints
``ended``. The run's cancel prints ``cancelled``. The parent pauses it with SIGSTOP.
"""

from __future__ import annotations

import sys
import threading
import uuid

from rxreact import RedisEventLog
from rxreact.events import TextDelta
from rxreact.runs.redis._writes import RunWriterToRedis

_out = threading.Lock()


def say(line: str) -> None:
    """One whole line (the run's cancel says its line from another thread)."""
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def write(writer: RunWriterToRedis, log: RedisEventLog, seq: int) -> bool | None:
    """Append event ``seq`` and a checkpoint, flush; whether the checkpoint was written."""
    sent = threading.Event()
    outcome: list[bool] = []

    def on_sent(written: bool) -> None:
        outcome.append(written)
        sent.set()

    writer.append(TextDelta(round=1, delta=f"w{seq}", seq=seq))
    writer.checkpoint(f"c{seq}".encode(), on_sent)
    log.flush()
    sent.wait(10)
    return outcome[0] if outcome else None


def main(url: str, lost_after: float) -> None:
    with RedisEventLog(url, lost_after=lost_after) as log:
        run_id = uuid.uuid4().hex
        writer = log.begin(run_id, "conv", lambda: say("cancelled"))
        assert isinstance(writer, RunWriterToRedis)
        say(run_id)
        for line in sys.stdin:
            command, *args = line.split()
            if command == "write":
                seq = int(args[0])
                say(f"written {seq} {write(writer, log, seq)}")
            elif command == "end":
                writer.end()
                log.flush()
                say("ended")


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
