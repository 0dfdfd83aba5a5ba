"""Takes docs/serve.png: the chat page of ``rxreact serve`` answering the demo's question.

The demo model (a loopback mock) and the demo tools, served in-process, driven by Debian's
headless Chromium through Selenium. Run: ``.venv/bin/python docs/serve_screenshot.py``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent
from rxreact.demo import QUESTION, demo_model_script, demo_tools
from rxreact.serve import create_app
from rxreact.testing import MockOpenAIServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from serve_helpers import serving

OUT = Path(__file__).with_name("serve.png")


def main() -> None:
    with (
        MockOpenAIServer(demo_model_script) as mock,
        OpenAIChatModel("mock-weather-model", base_url=mock.base_url, api_key="sk-demo") as model,
        serving(create_app(ReactAgent(model, demo_tools(0.5), memory=InMemoryChatMemory()))) as url,
        tempfile.TemporaryDirectory() as profile,
    ):
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for flag in (
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--window-size=1100,1300", "--hide-scrollbars", f"--user-data-dir={profile}",
        ):  # fmt: skip
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            driver.get(url)
            box = driver.find_element(By.ID, "input")
            box.send_keys(QUESTION)
            box.send_keys(Keys.ENTER)
            WebDriverWait(driver, 30).until(
                lambda d: d.execute_script(
                    "const m = document.querySelector('article.msg.assistant');"
                    "const i = m && m.querySelector('img.marble-svg');"
                    "return m && m.dataset.state === 'done' && i && i.complete"
                    " && i.naturalWidth > 0;"
                )
            )
            driver.execute_script("document.querySelector('details.reasoning').open = true")
            driver.save_screenshot(str(OUT))
        finally:
            driver.quit()
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
