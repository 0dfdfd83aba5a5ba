"""Showing a run in a terminal: the answer on stdout, everything else on stderr.

Only answer text goes to ``out``, so ``rxreact chat q > answer.txt`` holds the answer and
nothing else; round markers, tool activity, reasoning and the spinner go to ``err``. When the
reader of either goes away (``rxreact chat q | head``), writing stops and
:attr:`TerminalRenderer.broken_pipe` is set, rather than an exception escaping into the run. Colour
only on a terminal and never when ``NO_COLOR`` is set (https://no-color.org); the spinner only
when ``err`` is a terminal.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any, TextIO

from rxreact.events import (
    FinalAnswer,
    GuardrailTripped,
    Handoff,
    MaxRoundsReached,
    ReasoningDelta,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolCallStarted,
    ToolExecutionStarted,
    ToolResult,
)

__all__ = ["Spinner", "TerminalRenderer", "counted", "wants_color"]

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun in the number it needs: "1 model request", "2 model requests"."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def wants_color(stream: TextIO) -> bool:
    """Colour for ``stream``: a terminal, and ``NO_COLOR`` unset or empty."""
    return not os.environ.get("NO_COLOR") and _isatty(stream)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Spinner:
    """A one-line animation on ``stream`` while nothing else is shown; off when not a tty.

    The frames are drawn by a daemon thread that waits on an event between frames, so
    :meth:`stop` ends it at once; the line is then blanked with spaces (no escape codes).
    """

    def __init__(self, stream: TextIO, *, enabled: bool | None = None) -> None:
        self._stream = stream
        self.enabled: bool = _isatty(stream) if enabled is None else enabled
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._label = ""
        self._width = 0

    def start(self, label: str) -> None:
        """Show ``label`` with the animation (replacing the label of a running spinner)."""
        if not self.enabled:
            return
        with self._lock:
            self._label = label
            if self._thread is not None:
                return
            self._stopped.clear()
            self._thread = threading.Thread(target=self._spin, name="rxreact-spinner", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Remove the spinner's line (no-op when it is not shown)."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._stopped.set()
        if thread is None:
            return
        thread.join()
        with self._lock:
            with contextlib.suppress(OSError):
                self._stream.write("\r" + " " * self._width + "\r")
                self._stream.flush()
            self._width = 0

    def _spin(self) -> None:
        frame = 0
        while True:
            with self._lock:
                if self._stopped.is_set():
                    return
                text = f"{FRAMES[frame % len(FRAMES)]} {self._label}"
                try:
                    self._stream.write("\r" + text.ljust(self._width))
                    self._stream.flush()
                except OSError:  # the terminal went away: nothing to animate any more
                    return
                self._width = max(self._width, len(text))
            frame += 1
            if self._stopped.wait(0.08):  # the animation's frame time, not a wait for an event
                return


class TerminalRenderer:
    """Prints a run live: answer text to ``out``; reasoning (dimmed), tools, rounds to ``err``.

    Args:
        out: where the answer goes (default stdout).
        err: where everything else goes (default: ``out``, everything in one stream).
        color: force colour on or off (default: :func:`wants_color` of each stream).
        spinner: show a spinner on ``err`` while waiting (default: when ``err`` is a tty).
    """

    def __init__(
        self,
        out: TextIO,
        err: TextIO | None = None,
        *,
        color: bool | None = None,
        spinner: bool | None = None,
    ) -> None:
        self.out = out
        self.err: TextIO = err if err is not None else out
        self._color_out = wants_color(out) if color is None else color
        self._color_err = wants_color(self.err) if color is None else color
        self.spinner: Spinner = Spinner(self.err, enabled=spinner)
        self._at_line_start = {id(self.out): True, id(self.err): True}
        self._in_reasoning = False
        self._running_tools = 0
        self.broken_pipe: threading.Event = threading.Event()
        """Set when a write found its reader gone; every later write is skipped."""

    # -- writing ------------------------------------------------------------------------------

    def style(self, text: str, code: str, stream: TextIO | None = None) -> str:
        """``text`` in the SGR style ``code`` when ``stream`` (default ``err``) has colour."""
        color = self._color_err if stream is None or stream is self.err else self._color_out
        return f"\x1b[{code}m{text}\x1b[0m" if color else text

    def write(self, text: str, stream: TextIO | None = None) -> None:
        """Write ``text`` (after removing the spinner) to ``stream`` (default ``err``)."""
        stream = stream or self.err
        if not text or self.broken_pipe.is_set():
            return
        self.spinner.stop()
        other = self.out if stream is self.err else self.err
        try:
            if other is not stream and not self._at_line_start[id(other)] and _isatty(other):
                # Both streams show on one terminal: end the other's line first.
                other.write("\n")
                other.flush()
                self._at_line_start[id(other)] = True
            stream.write(text)
            stream.flush()
        except BrokenPipeError:
            self.broken_pipe.set()
            return
        self._at_line_start[id(stream)] = text.endswith("\n")

    def line(self, text: str, stream: TextIO | None = None) -> None:
        """``text`` on a line of its own."""
        stream = stream or self.err
        if not self._at_line_start[id(stream)]:
            self.write("\n", stream)
        self.write(text + "\n", stream)

    def interrupted(self) -> None:
        """What Ctrl-C leaves behind: a newline (ending the ``^C`` echo), ``interrupted``."""
        self.spinner.stop()
        self._in_reasoning = False
        self._running_tools = 0
        if not self._at_line_start[id(self.out)]:
            self.write("\n", self.out)
        self.write("\n" + self.style("interrupted", "33") + "\n")

    def error(self, message: str) -> None:
        """One line on ``err`` for what ended a run."""
        self.spinner.stop()
        self.line(self.style(f"rxreact: {message}", "31"))

    # -- events -------------------------------------------------------------------------------

    def __call__(self, event: Any) -> None:
        """Render one event (use as the ``on_next`` of a subscription)."""
        if event.path:  # a run of an agent tool: its call and result show, not its inside
            return
        if isinstance(event, ReasoningDelta):
            if not self._in_reasoning:
                self.line(self.style("(thinking)", "2"))
                self._in_reasoning = True
            self.write(self.style(event.delta, "2;3"))
            return
        if self._in_reasoning:
            self._in_reasoning = False
            self.line("")
        if isinstance(event, RoundStarted):
            self.line(self.style(f"── round {event.round} ──", "2"))
            self.spinner.start("thinking…")
        elif isinstance(event, TextDelta):
            self.write(event.delta, self.out)
        elif isinstance(event, ToolCallStarted):
            self.line(self.style(f"→ model calls {event.name} [{event.call_id}]", "36"))
        elif isinstance(event, ToolExecutionStarted):
            self._running_tools += 1
            self.line(self.style(f"⚙ running {event.name} …", "33"))
            self.spinner.start(f"running {counted(self._running_tools, 'tool')}…")
        elif isinstance(event, ToolResult):
            self._running_tools = max(0, self._running_tools - 1)
            mark = self.style("✗", "31") if event.is_error else self.style("✓", "32")
            preview = event.content if len(event.content) <= 90 else event.content[:87] + "…"
            self.line(f"{mark} {event.name} ({event.duration_s:.2f} s): {preview}")
            if self._running_tools:
                self.spinner.start(f"running {counted(self._running_tools, 'tool')}…")
        elif isinstance(event, RoundFinished):
            self.spinner.stop()
            if event.mode == "final_answer" and not self._at_line_start[id(self.out)]:
                self.write("\n", self.out)
        elif isinstance(event, Handoff):
            self.line(self.style(f"⇢ {event.from_agent} hands over to {event.to_agent}", "35"))
        elif isinstance(event, GuardrailTripped):
            self.spinner.stop()
            self.line(self.style(f"✗ guardrail {event.guardrail}: {event.reason}", "31"))
        elif isinstance(event, MaxRoundsReached):
            self.line(self.style("max rounds reached: asking for the answer now", "35"))
        elif isinstance(event, FinalAnswer):
            usage = (
                f", {counted(event.usage.total_tokens, 'token')}"
                if event.usage and event.usage.total_tokens
                else ""
            )
            self.line(self.style(f"[{counted(event.rounds, 'model request')}{usage}]", "2"))
