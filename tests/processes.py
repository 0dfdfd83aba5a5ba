"""Tests end what they start: a child process is waited for with a timeout and SIGKILLed
past it, whatever happened (a failed assertion, pytest-timeout's interrupt), so no process
and none of its pipes outlive the test that started it."""

from __future__ import annotations

import signal
import subprocess
from typing import Any

__all__ = ["finish"]


def finish(
    process: subprocess.Popen[Any],
    *,
    timeout: float = 30.0,
    interrupt: signal.Signals | None = None,
) -> tuple[Any, Any]:
    """Wait for ``process`` to end (after sending it ``interrupt``, if given); its stdout and
    stderr.

    Raises:
        AssertionError: it had not ended after ``timeout`` seconds (it is SIGKILLed first).
    """
    try:
        if interrupt is not None and process.poll() is None:
            process.send_signal(interrupt)
        try:
            return process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate(timeout=10)
            raise AssertionError(
                f"{process.args!r} did not end within {timeout} s, killed: {str(err)[-2000:]}"
            ) from None
    finally:
        if process.poll() is None:  # anything else went wrong: nothing is left running
            process.kill()
            process.communicate(timeout=10)
