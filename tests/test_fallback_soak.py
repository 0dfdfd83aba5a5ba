"""A smaller soak of FallbackModel in the suite (``python -m benchmarks.fallback_soak`` runs
2,000): 200 agent runs, three faulty loopback servers, both I/O modes, breakers on."""

from __future__ import annotations

import pytest

from benchmarks.fallback_soak import soak

pytestmark = pytest.mark.integration


def test_200_runs_with_random_faults_on_every_model_none_stuck_no_invalid_history() -> None:
    report = soak(200, concurrency=8, seed=31)
    assert report.runs == 200
    assert report.stuck == 0, report.lines()
    assert report.invalid == [], report.lines()
    assert report.foreign_errors == [], report.lines()
    assert report.outcomes["answered"] > 100, report.lines()  # the chain mostly answers
    assert report.switches > 50 and report.restarts > 5, report.lines()  # faults did hit
