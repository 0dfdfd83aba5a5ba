"""The chat page in a real headless Chromium (Debian's chromium and chromedriver, through
Selenium), for the browser tests: the driver, and the page as a user sees it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from serve_helpers import require_executable, unavailable

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1100,900",
)  # fmt: skip
WAIT_S = 20


@contextmanager
def chromium() -> Iterator[Any]:
    """A Selenium driver of headless Chromium on a fresh profile (skips, or fails with
    ``RXREACT_REQUIRE_BROWSER=1``, where chromium, chromedriver or selenium is missing)."""
    binary = require_executable("chromium")
    chromedriver = require_executable("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("selenium is not installed")
    with tempfile.TemporaryDirectory(prefix="rxreact-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = binary
        for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
        try:
            yield driver
        finally:
            driver.quit()


class Page:
    """The chat page of one server, as a user sees it (opened on an empty transcript)."""

    def __init__(self, driver: Any, url: str) -> None:
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver = driver
        self.wait = WebDriverWait(driver, WAIT_S)
        driver.get(url)
        driver.execute_script("localStorage.clear()")
        driver.refresh()

    def ask(self, question: str) -> None:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys

        box = self.driver.find_element(By.ID, "input")
        box.send_keys(question)
        box.send_keys(Keys.ENTER)

    def js(self, script: str, *args: Any) -> Any:
        """The value of ``script`` (a function body: ``return ...``) run in the page."""
        return self.driver.execute_script(script, *args)

    def answer(self) -> dict[str, Any]:
        """The last assistant message: its state, answer text and tool rows."""
        result: dict[str, Any] = self.js(
            """
            const all = document.querySelectorAll('article.msg.assistant');
            const msg = all[all.length - 1];
            if (!msg) return {state: null, text: '', tools: [], count: 0, marbles: 0};
            const img = msg.querySelector('img.marble-svg');
            return {
              state: msg.dataset.state,
              status: msg.querySelector('.status').textContent,
              count: all.length,
              text: [...msg.querySelectorAll('.answer-text')].map(e => e.textContent).join(''),
              tools: [...msg.querySelectorAll('.tool-row')].map(r => ({
                state: r.dataset.state,
                name: r.querySelector('.name').textContent,
                args: r.querySelector('.args').textContent,
                result: (r.querySelector('.result') || {}).textContent || null,
              })),
              marbles: img && img.complete ? img.naturalWidth : 0,
            };
            """
        )
        return result

    def until(self, condition: Any) -> dict[str, Any]:
        """The last answer, once ``condition(answer)`` holds (waits up to ``WAIT_S``)."""
        seen: dict[str, Any] = self.wait.until(
            lambda _: a if condition(a := self.answer()) else None
        )
        return seen

    def until_js(self, script: str, *args: Any) -> Any:
        """The value of ``script`` once it is truthy (waits up to ``WAIT_S``)."""
        return self.wait.until(lambda _: self.js(script, *args))
