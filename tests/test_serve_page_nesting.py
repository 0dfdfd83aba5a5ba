"""The chat page under a hostile answer, in real headless Chromium: 3,000 nested ``>`` (6 KB)
is drawn with its nesting capped (deeper levels as text), streamed and again on a reload from
the saved transcript; a saved answer the renderer cannot take is shown as plain text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from browser_page import Page, chromium
from serve_helpers import chat_servers

from rxreact.model.scripted.replies import text_reply

NESTED = "> " * 3000 + "the bottom of it"  # 6 KB: 3,000 block quotes, one inside the other
MAX_DEPTH = 16  # markdown.js's cap on block nesting


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


@pytest.fixture
def chat_server() -> Iterator[Any]:
    with chat_servers() as start:
        yield start


def depth_of_answer(page: Page) -> dict[str, Any]:
    shape: dict[str, Any] = page.js(
        """
        const all = document.querySelectorAll('article.msg.assistant .answer-text');
        const box = all[all.length - 1];
        let depth = 0, node = box.querySelector('blockquote');
        while (node) { depth += 1; node = node.querySelector(':scope > blockquote'); }
        return {depth, text: box.textContent, plain: box.classList.contains('plain')};
        """
    )
    return shape


def test_a_deeply_nested_answer_is_capped_streamed_and_on_reload(
    browser: Any, chat_server: Any
) -> None:
    page = Page(browser, chat_server([text_reply(NESTED, pieces=60)]).url)
    page.ask("Quote yourself")
    page.until(lambda a: a["state"] == "done")
    drawn = depth_of_answer(page)
    assert drawn["depth"] == MAX_DEPTH + 1  # the last level holds the rest as text
    assert drawn["text"].endswith("> > > the bottom of it")
    assert drawn["text"].count(">") == 3000 - MAX_DEPTH - 1

    browser.refresh()  # the transcript replays from localStorage
    page.until(lambda a: a["state"] == "done" and a["count"] == 1)
    assert depth_of_answer(page) == drawn


def test_a_saved_answer_the_renderer_cannot_take_is_plain_text(
    browser: Any, chat_server: Any
) -> None:
    page = Page(browser, chat_server([text_reply("Still here.")]).url)
    saved = {
        "id": "chat-saved",
        "messages": [
            {"role": "user", "id": "m1", "text": "Numbers?"},
            {"role": "assistant", "state": "done", "parts": [{"kind": "text", "text": 12345}]},
        ],
    }
    page.js("localStorage.setItem('rxreact.chat.v1', arguments[0])", json.dumps(saved))
    browser.refresh()
    page.until(lambda a: a["count"] == 1)
    assert depth_of_answer(page) == {"depth": 0, "text": "12345", "plain": True}
    page.ask("Are you there?")  # the page works on
    assert page.until(lambda a: a["state"] == "done" and a["count"] == 2)["text"] == "Still here."


def test_nested_lists_are_capped_too(browser: Any, chat_server: Any) -> None:
    page = Page(browser, chat_server([]).url)
    shape = page.js(
        """
        const { renderMarkdown, MAX_DEPTH } = await import('/static/markdown.js');
        const box = document.createElement('div');
        box.append(renderMarkdown('- '.repeat(3000) + 'x\\n\\n' + '> - '.repeat(1000) + 'y'));
        return {
          cap: MAX_DEPTH,
          lists: box.querySelector(':scope > ul').querySelectorAll('ul').length + 1,
          mixed: box.querySelector(':scope > blockquote')
            .querySelectorAll('blockquote, ul').length + 1,
          text: box.textContent.slice(-13),
        };
        """
    )
    assert shape["cap"] == MAX_DEPTH
    assert shape["lists"] == MAX_DEPTH + 1 and shape["mixed"] == MAX_DEPTH + 1
    assert shape["text"].endswith("> - > - > - y")


def test_a_streamed_answer_is_drawn_a_few_times_a_second_not_per_chunk(
    browser: Any, chat_server: Any
) -> None:
    words = " ".join(f"word{i}" for i in range(300))
    page = Page(browser, chat_server([text_reply(words, pieces=300, interval=0.005)]).url)
    page.js(
        """
        window.draws = 0;
        new MutationObserver((changes) => {
          for (const change of changes)
            for (const node of change.addedNodes)
              if (node.matches && node.matches('article.msg.assistant')) window.draws += 1;
        }).observe(document.getElementById('messages'), {childList: true});
        """
    )
    started = page.js("return performance.now()")
    page.ask("Count")
    assert page.until(lambda a: a["state"] == "done")["text"] == words
    took_ms = page.js("return performance.now()") - started
    draws = page.js("return window.draws")
    assert 1 <= draws <= took_ms / 100 + 3, (draws, took_ms)  # 300 chunks, a draw per 100 ms
