"""The kill soak works: a few runs whose workers are SIGKILLed at random points all complete
once, with gap-free followers and the non-idempotent tool run at most once (the real soak,
100 runs per log: ``python -m benchmarks.takeover_soak --runs 100``). Here the four runs go on at
once, as runs of a served agent do, so a worker started for one run may resume another's."""

from __future__ import annotations

import pytest
from redis_server import RedisServer

from benchmarks.takeover_soak import Soak, parse

# Each run has its own 30 s bound (a violation, not a hang); four at once, each starting two or
# three worker processes, take longer than the suite's 60 s on a machine busy with other work.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def test_a_small_kill_soak_on_sqlite(capsys: pytest.CaptureFixture[str]) -> None:
    soak = Soak(parse(["--runs", "4", "--seed", "3", "--second-kill", "0.5", "--concurrency", "4"]))
    assert soak.main() == 0, capsys.readouterr().out
    assert soak.completed == 4 and soak.kills >= 1


def test_a_small_kill_soak_on_redis(
    redis_server: RedisServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        *("--log", redis_server.url, "--runs", "4", "--seed", "4"),
        *("--second-kill", "0.5", "--concurrency", "4"),
    ]
    soak = Soak(parse(args))
    assert soak.main() == 0, capsys.readouterr().out
    assert soak.completed == 4 and soak.kills >= 1
