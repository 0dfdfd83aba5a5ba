"""The chat page in a real headless Chromium: a typed answer is a card that fills in while the
answer streams, empties when a draft is rejected, and ends as the validated object."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from browser_page import Page, chromium
from pydantic import BaseModel
from serve_helpers import Gate, serving

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent
from rxreact.model.scripted.replies import text_reply
from rxreact.serve import create_app
from rxreact.testing import MockOpenAIServer

pytestmark = pytest.mark.integration


class Forecast(BaseModel):
    city: str
    celsius: int
    summary: str


CARD = """
const card = document.querySelector('article.msg.assistant .output-card');
if (!card) return null;
const fields = {};
const names = [...card.querySelectorAll('dt')].map(d => d.textContent);
const values = [...card.querySelectorAll('dd')].map(d => d.textContent);
names.forEach((name, i) => { fields[name] = values[i]; });
const head = card.querySelector('.output-head').textContent;
return {state: card.dataset.state, round: card.dataset.round, head, fields};
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def test_the_output_card_fills_in_then_stands_validated(browser: Any) -> None:
    gate = Gate()
    draft = text_reply(json.dumps({"city": "Oslo", "celsius": "cold", "summary": "Snow"}), size=5)
    answer = text_reply(json.dumps({"city": "Oslo", "celsius": -3, "summary": "Snow"}), size=5)
    script = [draft, gate.reply(answer[:4], answer[4:])]  # the second draft stops half-way
    with (
        MockOpenAIServer(script) as mock,
        OpenAIChatModel("mock", base_url=mock.base_url, api_key="sk-test") as model,
    ):
        agent = ReactAgent(model, memory=InMemoryChatMemory(), output_type=Forecast)
        with serving(create_app(agent)) as url:
            page = Page(browser, url)
            page.ask("Weather in Oslo?")
            forming = page.until_js(  # the second draft, half-way: the first was withdrawn
                f"const c = (() => {{{CARD}}})(); return c && c.round === '2' && c;"
            )
            assert forming == {
                "state": "forming",
                "round": "2",
                "head": "forming…",
                "fields": {"city": "Oslo"},
            }
            gate.open()
            done = page.until_js(
                f"const c = (() => {{{CARD}}})(); return c && c.state === 'done' && c;"
            )
    assert done == {
        "state": "done",
        "round": "2",
        "head": "answer",
        "fields": {"city": "Oslo", "celsius": "-3", "summary": "Snow"},
    }
