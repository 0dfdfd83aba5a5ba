"""The chat page in real headless Chromium with users: it asks for the token once and keeps it
(the marble diagram is fetched with it too: no cookie carries it), and HTML or script in a
question, an answer or a tool's arguments and result is shown as text, never run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_page import WAIT_S, Page, chromium
from serve_helpers import chat_servers

from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.serve.auth import TokenAuthenticator

TOKEN = "alice-token-0123456789"
HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


@pytest.fixture
def chat_server() -> Iterator[Any]:
    with chat_servers() as start:
        yield start


def signed_in_user(driver: Any) -> Any:
    """What the page's probe of /api/me answered (an open prompt would fail this call)."""
    return driver.execute_async_script(
        "window.rxreactSignedIn.then((me) => arguments[0](me && me.user))"
    )


def test_the_page_asks_for_the_token_once_and_keeps_it(
    browser: Any,
    chat_server: Any,
) -> None:
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    url, _, app = chat_server(
        [text_reply("Hello Alice.")], authenticate=TokenAuthenticator({TOKEN: "alice"})
    )
    browser.get(url)
    prompt = WebDriverWait(browser, WAIT_S).until(expected_conditions.alert_is_present())
    assert "token" in prompt.text.lower()
    prompt.send_keys(TOKEN)
    prompt.accept()
    browser.refresh()  # the probe's 401 came before the token: the page now has it
    assert signed_in_user(browser) == "alice"

    page = Page.__new__(Page)  # the page as it is: Page() would clear the kept token
    page.driver, page.wait = browser, WebDriverWait(browser, WAIT_S)
    page.ask("Hi")
    done = page.until(lambda a: a["state"] == "done" and a["marbles"] > 0)  # <img> signed in
    assert done["text"] == "Hello Alice."
    browser.refresh()
    assert signed_in_user(browser) == "alice"  # kept: no second prompt
    assert [c.split("/")[0] for c in app.state.runs.agent.memory.conversation_ids()] == ["alice"]


def test_html_and_script_in_messages_are_inert(
    browser: Any,
    chat_server: Any,
) -> None:
    url, _, _ = chat_server(
        [tool_call_reply(("get_weather", {"city": HOSTILE})), text_reply(f"Answer: {HOSTILE}")]
    )
    page = Page(browser, url)
    page.ask(HOSTILE)
    done = page.until(lambda a: a["state"] == "done" and a["marbles"] > 0)
    assert done["text"] == f"Answer: {HOSTILE}"
    assert done["tools"][0]["result"] == f"{HOSTILE}: sunny, 21°C"
    found = browser.execute_script(
        """
        const main = document.getElementById('messages');
        return {
          pwned: window.pwned === undefined ? null : window.pwned,
          scripts: main.querySelectorAll('script').length,
          images: [...main.querySelectorAll('img')].map((i) => i.className),
          question: main.querySelector('article.msg.user .user-text').textContent,
        };
        """
    )
    assert found == {"pwned": None, "scripts": 0, "images": ["marble-svg"], "question": HOSTILE}
    # the diagram itself, opened on its own, carries the text escaped
    svg = browser.execute_async_script(
        "fetch(document.querySelector('img.marble-svg').src)"
        ".then((r) => r.text()).then(arguments[0])"
    )
    assert "<script" not in svg and "<img" not in svg
