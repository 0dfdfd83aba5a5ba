"""The chat page in a real headless Chromium, with its run parked and resumed across a worker
restart: ``rxreact serve`` processes on one SQLite event log and one SQLite chat memory.

The first worker asks for approval of ``pay`` and parks the run; it is killed (SIGKILL: nothing
is flushed or closed). Once the page has tried to reconnect several times, a second worker
starts on the same port and files and answers the page's next try: the card is still there,
Approve goes to the new worker, which resumes the run. The tool runs once, in the new worker,
and the answer streams into the same page (reconnected by itself, or reloaded), and the
conversation goes on. A worker stopped cleanly (SIGTERM) lets its parked run go.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser_page import WAIT_S, Page, chromium
from parked_tools import PAID_ENV
from serve_helpers import SSEEvent, parse_sse, serve_process
from test_serve_page_cards import card_when, click, served_agent

from rxreact import SQLiteEventLog, follow
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.testing import MockOpenAIServer

TESTS = Path(__file__).parent
LOST_AFTER = "1"  # a dead worker's running runs are resumed after a second, not thirty
SLOW_RESTART = 6  # the page's failed tries to reconnect before the new worker starts (~5 s)
COUNT_RECONNECTS = """
const fetch = window.fetch;
window.reconnects = 0;
window.fetch = (url, ...rest) => {
  if (String(url).startsWith('/api/runs/')) window.reconnects += 1;
  return fetch(url, ...rest);
};
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


@contextmanager
def rxreact_serve(
    env: dict[str, str], port: int, *options: str
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """An ``rxreact serve`` process on ``port`` (0: a free one): its URL and the process."""
    with serve_process(env, *options, port=port) as served:
        yield served


def run_states(events: Path) -> list[str]:
    """The state of every run in the event log's file (``running``, ``parked``, ``ended``)."""
    return [state for state, _ in runs_of(events)]


def until_parked(events: Path) -> None:
    """Return once the file says the one run is parked (fail after ``WAIT_S``).

    The park is written in the same transaction as the ``tool_approval_requested`` that
    leads to it, so a follower reading the file waits on that event, and the park is there.
    """
    with contextlib.closing(sqlite3.connect(events, timeout=5)) as db:
        (run_id,) = db.execute("SELECT run_id FROM runs").fetchone()
    asked = threading.Event()
    with SQLiteEventLog(events) as log:
        subscription = follow(run_id, log).subscribe(
            lambda e: asked.set() if e.type == "tool_approval_requested" else None
        )
        try:
            assert asked.wait(WAIT_S), f"no approval request after {WAIT_S} s"
        finally:
            subscription.dispose()
    assert run_states(events) == ["parked"]


def runs_of(events: Path) -> list[tuple[str, float]]:
    """(state, heartbeat) of every run in the event log's file."""
    with contextlib.closing(sqlite3.connect(events, timeout=5)) as db:
        return [(row[0], row[1]) for row in db.execute("SELECT state, beat FROM runs")]


def serve_env(mock: MockOpenAIServer, paid: Path) -> dict[str, str]:
    """The environment of a worker on ``mock`` whose ``pay`` writes to ``paid``."""
    return {
        **os.environ,
        "OPENAI_BASE_URL": mock.base_url, "OPENAI_API_KEY": "sk-test", "RXREACT_MODEL": "mock",
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        PAID_ENV: str(paid),
    }  # fmt: skip


def serve_options(events: Path, chats: Path) -> tuple[str, ...]:
    return ("--tools", "parked_tools:pay", "--memory", str(chats),
            "--event-log", str(events), "--lost-after", LOST_AFTER)  # fmt: skip


@pytest.mark.parametrize("comes_back", ["reconnect", "reload"])
def test_an_approval_card_outlives_its_worker_and_is_approved_on_the_next(
    browser: Any, tmp_path: Path, comes_back: str
) -> None:
    events, chats, paid = tmp_path / "runs.sqlite3", tmp_path / "chats.sqlite3", tmp_path / "paid"
    script = [
        tool_call_reply(("pay", {"amount": 3})),
        text_reply("Paid 3."),
        text_reply("You paid 3."),
    ]
    with MockOpenAIServer(script) as mock:
        env, options = serve_env(mock, paid), serve_options(events, chats)
        with rxreact_serve(env, 0, *options) as (url, first):
            page = Page(browser, url)
            page.js(COUNT_RECONNECTS)
            page.ask("Pay 3.")
            asked = card_when(page, "waiting")
            until_parked(events)
            first.send_signal(signal.SIGKILL)
            first.wait(15)
        # A restart slower than the page's first few tries (seconds: a deploy): it keeps trying.
        page.until_js(f"return window.reconnects >= {SLOW_RESTART};")
        assert page.answer()["state"] == "streaming"

        port = int(url.rsplit(":", 1)[1])
        with rxreact_serve(env, port, *options) as (again, second):
            assert again == url
            if comes_back == "reload":  # the new worker replays the parked run from seq 1
                browser.refresh()
            assert card_when(page, "waiting") == asked
            assert not paid.exists()  # nothing ran while the run was parked
            click(page, "Approve")
            # done, with the marble diagram the new worker draws from the log
            done = page.until(lambda a: a["state"] == "done" and a["marbles"] > 0)
            approved = card_when(page, "approved")
            assert run_states(events) == ["ended"]

            # The resumed run committed the turn and let the conversation go: it goes on.
            page.ask("How much did I pay?")
            follow_up = page.until(lambda a: a["count"] == 2 and a["state"] == "done")

    assert done["text"] == "Paid 3." and done["count"] == 1
    assert done["tools"][0]["result"] == "paid 3"
    assert approved["buttons"] == [] and approved["head"] == "pay asks for approval"
    assert paid.read_text().split() == [str(second.pid)]  # once, by the worker that resumed it
    # The dead worker's model response was recorded: the new one asked only for the answer.
    assert len(mock.requests) == 3
    assert "paid 3" in str(mock.requests[1]["messages"][-1])
    assert follow_up["text"] == "You paid 3."
    assert {"role": "assistant", "content": "Paid 3."} in mock.requests[2]["messages"]


def test_a_worker_stopped_cleanly_lets_its_parked_run_go(tmp_path: Path) -> None:
    events, chats, paid = tmp_path / "runs.sqlite3", tmp_path / "chats.sqlite3", tmp_path / "paid"
    parts = [{"type": "text", "text": "Pay 3."}]
    body = {"id": "c1", "messages": [{"id": "u1", "role": "user", "parts": parts}]}
    with MockOpenAIServer([tool_call_reply(("pay", {"amount": 3}))]) as mock:
        options = serve_options(events, chats)
        with rxreact_serve(serve_env(mock, paid), 0, *options) as (url, worker):
            with httpx.stream("POST", f"{url}/api/chat", json=body, timeout=30) as response:
                for event in parse_sse(response.iter_lines()):
                    if isinstance(event, SSEEvent) and "tool-approval-request" in event.data:
                        break
            until_parked(events)
            worker.send_signal(signal.SIGTERM)  # what a deploy sends
            # uvicorn stops serving, then raises the signal again (which ends the process).
            assert worker.wait(15) == -signal.SIGTERM
    # Its heartbeat is withdrawn: the next worker applies a decision on it at once, without
    # waiting for lost_after to pass since this one's last beat.
    assert runs_of(events) == [("parked", 0)]
    assert not paid.exists()


GAVE_UP = """
const chat = JSON.parse(localStorage.getItem('rxreact.chat.v1'));
chat.messages[chat.messages.length - 1].state = 'aborted';
localStorage.setItem('rxreact.chat.v1', JSON.stringify(chat));
"""


def test_a_reload_follows_again_an_answer_the_page_gave_up_on(browser: Any) -> None:
    script = [tool_call_reply(("delete_file", {"path": "/tmp/a"})), text_reply("Deleted.")]
    with served_agent(script) as (url, _):
        page = Page(browser, url)
        page.ask("Delete /tmp/a")
        card_when(page, "waiting")
        # What the page keeps once it gave up reconnecting (a server away for over a minute);
        # the run still waits for its approval, as a parked one may for days.
        page.js(GAVE_UP)
        browser.refresh()
        assert page.until(lambda a: a["state"] == "streaming")["count"] == 1
        click(page, "Approve")
        done = page.until(lambda a: a["state"] == "done")
    assert done["text"] == "Deleted." and card_when(page, "approved")["buttons"] == []
