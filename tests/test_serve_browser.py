"""The chat page in a real headless Chromium (Debian's, driven by chromedriver through Selenium):
text streams in before the run ends, tool rows, a reload mid-answer continues, a dropped
connection resumes, stop cancels and shows the answer as stopped.

The mock model's replies stop at a :class:`Gate` the test opens, so "before the run ends" is a
fact of the script, not a race with the clock.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_page import WAIT_S, Page, chromium
from serve_helpers import Gate, chat_servers, serving

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent
from rxreact.model.scripted.replies import Hang, text_reply, tool_call_reply
from rxreact.serve import create_app
from rxreact.testing import MockOpenAIServer


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


@pytest.fixture
def chat_server() -> Iterator[Any]:
    with chat_servers() as start:
        yield start


ANSWER = "Paris is sunny and warm today, a fine day for a walk by the river."


def test_text_streams_in_before_the_run_ends_with_tool_rows(browser: Any, chat_server: Any) -> None:
    gate = Gate()
    reply = text_reply(ANSWER)
    url, _, _ = chat_server(
        [tool_call_reply(("get_weather", {"city": "Paris"})), gate.reply(reply[:5], reply[5:])]
    )
    page = Page(browser, url)
    page.ask("What is the weather in Paris?")

    partial = page.until(lambda a: a["text"] == "Paris is sunny and ")
    assert partial["state"] == "streaming"  # the run is held at the gate: it has not ended
    assert partial["tools"] == [
        {"state": "output-available", "name": "get_weather", "args": '{"city":"Paris"}',
         "result": "Paris: sunny, 21°C"}
    ]  # fmt: skip
    gate.open()
    done = page.until(lambda a: a["state"] == "done" and a["marbles"] > 0)
    assert done["text"] == ANSWER
    assert done["count"] == 1


def test_reload_mid_answer_continues_the_same_run(browser: Any, chat_server: Any) -> None:
    gate = Gate()
    reply = text_reply(ANSWER)
    url, mock, _ = chat_server([gate.reply(reply[:4], reply[4:])])
    page = Page(browser, url)
    page.ask("And tomorrow?")
    page.until(lambda a: a["text"] == "Paris is sunny ")

    browser.refresh()  # the page's stream is gone; the run is not
    replayed = page.until(lambda a: a["text"] == "Paris is sunny ")
    assert replayed["state"] == "streaming"
    gate.open()
    done = page.until(lambda a: a["state"] == "done")
    assert done["text"] == ANSWER and done["count"] == 1
    assert len(mock.requests) == 1 and mock.disconnects == 0  # one model stream, never cut


def test_stop_cancels_the_run(browser: Any, chat_server: Any) -> None:
    from selenium.webdriver.common.by import By

    url, mock, _ = chat_server([[*text_reply(ANSWER)[:4], Hang()]])
    page = Page(browser, url)
    page.ask("Talk forever")
    page.until(lambda a: a["text"] == "Paris is sunny ")
    browser.find_element(By.ID, "stop").click()

    stopped = page.until(lambda a: a["state"] == "stopped" and a["marbles"] > 0)
    assert stopped["text"] == "Paris is sunny " and stopped["status"] == "stopped"
    assert mock.wait_for_disconnects(1, timeout=WAIT_S)  # the model's stream was closed

    # Stopped is an ending the reader chose: shown neutral, not as a failure.
    shown = page.js(
        """
        const msg = document.querySelector('article.msg.assistant');
        const svg = await (await fetch(msg.querySelector('img.marble-svg').src)).text();
        return {
          text: msg.innerText, runId: msg.dataset.runId,
          errors: msg.querySelectorAll('.error-text').length,
          status: getComputedStyle(msg.querySelector('.status')).color,
          muted: getComputedStyle(msg.querySelector('.who')).color, svg,
        };
        """
    )
    assert shown["errors"] == 0 and shown["status"] == shown["muted"]  # grey, like the labels
    assert "Error" not in shown["text"] and shown["runId"] not in shown["text"]
    assert "■ stopped at" in shown["svg"] and "RunCancelledError" not in shown["svg"]
    assert shown["runId"] not in shown["svg"] and "failed" not in shown["svg"]


def test_a_dropped_connection_resumes_from_the_last_event_id(browser: Any) -> None:
    gate = Gate()
    reply = text_reply(ANSWER)
    with (
        MockOpenAIServer([gate.reply(reply[:4], reply[4:])]) as mock,
        OpenAIChatModel("mock", base_url=mock.base_url, api_key="sk-test") as model,
    ):
        app = create_app(ReactAgent(model, memory=InMemoryChatMemory()))
        try:
            with serving(app) as url:
                page = Page(browser, url)
                page.ask("Hold on")
                page.until(lambda a: a["text"] == "Paris is sunny ")
            # The server went away under the open stream; the run lives on in the app. The
            # page retries; a server on the same port answers with the rest after its last id.
            with serving(app, port=int(url.rsplit(":", 1)[1])):
                gate.open()
                done = page.until(lambda a: a["state"] == "done")
        finally:
            Gate.open_all()
    assert done["text"] == ANSWER and done["count"] == 1
    assert len(mock.requests) == 1 and mock.disconnects == 0
