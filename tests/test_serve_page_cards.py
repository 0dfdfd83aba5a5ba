"""The chat page in a real headless Chromium: a tool call waiting for approval is a card with
Approve / Deny that every open page of the conversation follows; text a run takes back (a round
restarted on another worker, an output guardrail that trips after the text went out) leaves
the page.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from browser_page import Page, chromium
from serve_helpers import Gate, chat_servers, serving

from rxreact import GuardrailResult, InMemoryChatMemory, OpenAIChatModel, ReactAgent, tool
from rxreact.events import FinalAnswer, RoundRestarted, RoundStarted, TextDelta
from rxreact.model.scripted.replies import text_reply, tool_call_reply
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


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Deletes a file."""
    return f"deleted {path}"


@contextmanager
def served_agent(script: list[Any]) -> Iterator[tuple[str, ReactAgent]]:
    """An agent with ``delete_file`` on a mock model playing ``script``, served: (url, agent)."""
    with (
        MockOpenAIServer(script) as mock,
        OpenAIChatModel("mock", base_url=mock.base_url, api_key="sk-test") as model,
    ):
        agent = ReactAgent(model, [delete_file], memory=InMemoryChatMemory())
        with serving(create_app(agent)) as url:
            yield url, agent


@pytest.fixture
def approval_url() -> Iterator[str]:
    script = [tool_call_reply(("delete_file", {"path": "/tmp/a"})), text_reply("Deleted.")]
    with served_agent(script) as (url, _):
        yield url


CARD = """
const cards = document.querySelectorAll('article.msg.assistant .approval-card');
return [...cards].map(c => ({
  approval: c.dataset.approval,
  head: c.querySelector('.approval-head').textContent,
  args: c.querySelector('.tool-row .args').textContent,
  buttons: [...c.querySelectorAll('button')].map(b => b.textContent),
}));
"""


def card_when(page: Page, approval: str) -> dict[str, Any]:
    cards = page.until_js(
        f"const all = (() => {{{CARD}}})(); "
        f"return all.length === 1 && all[0].approval === {approval!r} && all;"
    )
    card: dict[str, Any] = cards[0]
    return card


def click(page: Page, label: str) -> None:
    """Click the card's button in one step in the page (a render may replace the element)."""
    page.until_js(
        """
        const button = [...document.querySelectorAll('.approval-buttons button')]
          .find(b => b.textContent === arguments[0] && !b.disabled);
        if (button) button.click();
        return !!button;
        """,
        label,
    )


def test_an_approval_card_is_shown_again_on_reload_and_decided_in_every_page(
    browser: Any, approval_url: str
) -> None:
    page = Page(browser, approval_url)
    page.ask("Delete /tmp/a")
    waiting = card_when(page, "waiting")
    assert waiting == {
        "approval": "waiting", "head": "delete_file asks for approval",
        "args": '{"path":"/tmp/a"}', "buttons": ["Approve", "Deny"],
    }  # fmt: skip
    assert page.answer()["state"] == "streaming"

    browser.refresh()  # the run is replayed from its first event: the card is back
    assert card_when(page, "waiting") == waiting
    first = browser.current_window_handle
    browser.switch_to.new_window("tab")  # a second page of the same conversation
    try:
        browser.get(approval_url)
        card_when(page, "waiting")
        click(page, "Approve")
        done = page.until(lambda a: a["state"] == "done")
        assert done["text"] == "Deleted."
        assert card_when(page, "approved")["buttons"] == []
        browser.close()
    finally:
        browser.switch_to.window(first)
    # The first page learnt the decision from the run's stream, not from a button of its own.
    assert card_when(page, "approved")["buttons"] == []
    shown = page.until(lambda a: a["state"] == "done")
    assert shown["text"] == "Deleted." and shown["count"] == 1
    assert shown["tools"][0]["result"] == "deleted /tmp/a"


def test_a_denied_call_shows_as_denied(browser: Any, approval_url: str) -> None:
    page = Page(browser, approval_url)
    page.ask("Delete /tmp/a")
    card_when(page, "waiting")
    click(page, "Deny")
    assert card_when(page, "denied")["buttons"] == []
    done = page.until(lambda a: a["state"] == "done")
    assert "denied on the chat page" in done["tools"][0]["result"]  # what the model read


def test_a_restarted_round_replaces_its_text(browser: Any) -> None:
    with served_agent([]) as (url, agent):
        restarted_round(browser, url, agent.event_log)


def restarted_round(browser: Any, url: str, log: Any) -> None:
    # A run resumed on another worker, as its followers see it through the event log.
    writer = log.begin("run-restarted", "chat-restarted", lambda: None)
    seq = iter(range(1, 100))
    writer.append(RoundStarted(round=1, seq=next(seq)))
    for delta in ("Old text ", "that stops"):
        writer.append(TextDelta(round=1, seq=next(seq), delta=delta))
    page = Page(browser, url)
    page.js(
        "localStorage.setItem('rxreact.chat.v1', JSON.stringify(arguments[0]))",
        {
            "id": "chat-restarted",
            "messages": [
                {"role": "user", "id": "u1", "text": "q"},
                {"role": "assistant", "state": "streaming", "parts": [], "lastSeq": 0},
            ],
        },
    )
    browser.refresh()  # the page follows the conversation's active run
    page.until(lambda a: a["text"] == "Old text that stops")

    writer.append(RoundRestarted(round=1, seq=next(seq), reason="worker w1 stopped"))
    writer.append(RoundStarted(round=1, seq=next(seq)))
    page.until(lambda a: a["text"] == "" and a["state"] == "streaming")
    writer.append(TextDelta(round=1, seq=next(seq), delta="New "))
    assert page.until(lambda a: a["text"] == "New ")["state"] == "streaming"
    writer.append(TextDelta(round=1, seq=next(seq), delta="answer."))
    writer.append(FinalAnswer(round=1, seq=next(seq), text="New answer.", rounds=1))
    writer.end()
    done = page.until(lambda a: a["state"] == "done")
    assert done["text"] == "New answer." and done["count"] == 1


def secret_check(text: str) -> GuardrailResult:
    """Trips on an answer that tells the secret."""
    return GuardrailResult(tripped="secret" in text, reason="it tells the secret")


def test_a_tripped_guardrail_withdraws_the_text_shown(browser: Any, chat_server: Any) -> None:
    gate = Gate()
    reply = text_reply("Paris is sunny. The secret code is 42.")
    options = {"output_guardrails": [secret_check], "hold": "none"}
    url, _, _ = chat_server([gate.reply(reply[:4], reply[4:])], agent_options=options)
    page = Page(browser, url)
    page.ask("Tell me")
    assert page.until(lambda a: a["text"] == "Paris is sunny. ")["state"] == "streaming"
    gate.open()
    ended = page.until(lambda a: a["state"] == "withdrawn")
    assert ended["text"] == "" and ended["status"] == "withdrawn"
    shown = page.js(
        """
        const msg = document.querySelector('article.msg.assistant');
        return {
          errors: msg.querySelectorAll('.error-text').length,
          note: msg.querySelector('.withdrawn-text').textContent,
          grey: getComputedStyle(msg.querySelector('.status')).color
            === getComputedStyle(msg.querySelector('.who')).color,
        };
        """
    )
    assert shown == {
        "errors": 0,
        "grey": True,
        "note": "The answer was withdrawn by the output guardrail secret_check: "
        "it tells the secret",
    }


@tool(requires_approval=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"


def test_an_agent_tools_call_gets_the_same_card(browser: Any) -> None:
    with (
        MockOpenAIServer(
            [tool_call_reply(("pay", {"amount": 5}), ids=["pay1"]), text_reply("Paid 5.")]
        ) as child_mock,
        MockOpenAIServer(
            [tool_call_reply(("billing", {"question": "pay 5"}), ids=["b1"]), text_reply("Done.")]
        ) as root_mock,
        OpenAIChatModel("mock", base_url=child_mock.base_url, api_key="k") as child_model,
        OpenAIChatModel("mock", base_url=root_mock.base_url, api_key="k") as root_model,
    ):
        billing = ReactAgent(child_model, [pay], name="billing")
        root = ReactAgent(root_model, [billing.as_tool()], memory=InMemoryChatMemory())
        with serving(create_app(root)) as url:
            page = Page(browser, url)
            page.ask("Pay 5")
            waiting = card_when(page, "waiting")
            assert (waiting["head"], waiting["args"]) == ("pay asks for approval", '{"amount":5}')
            click(page, "Approve")
            assert card_when(page, "approved")["buttons"] == []
            done = page.until(lambda a: a["state"] == "done")
    assert done["text"] == "Done."
    assert [(t["name"], t["result"]) for t in done["tools"]] == [
        ("billing", "Paid 5."),
        ("pay", "paid 5"),
    ]
