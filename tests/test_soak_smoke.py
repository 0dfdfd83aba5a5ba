"""The soak script works: a few runs with many faults, none stuck (the real soak: make soak)."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.soak import Soak

pytestmark = pytest.mark.integration


def test_a_tiny_soak_has_no_stuck_run(capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(
        runs=24, concurrency=4, fault_rate=0.3, dispose_rate=0.2, bound=30.0, seed=3
    )
    soak = Soak(args)
    assert soak.main() == 0
    assert soak.stuck == [] and soak.foreign == []
    assert sum(soak.outcomes.values()) == 24
    assert "stuck runs: 0" in capsys.readouterr().out
