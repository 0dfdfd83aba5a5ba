"""The chat page in a real headless Chromium: answers as Markdown, markup that stays inert,
and a transcript that follows the stream (tests of the page's own JavaScript modules run them
in the page, imported as the page imports them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_page import Page, chromium
from serve_helpers import Gate, chat_servers

from rxreact.model.scripted.replies import text_reply


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


@pytest.fixture
def chat_server() -> Iterator[Any]:
    with chat_servers() as start:
        yield start


@pytest.fixture(scope="module")
def renderer(browser: Any) -> Iterator[Page]:
    """The page, idle: a place to import its Markdown module."""
    with chat_servers() as start:
        yield Page(browser, start([]).url)


def markdown_html(page: Page, text: str) -> str:
    html: str = page.js(
        """
        const { renderMarkdown } = await import('/static/markdown.js');
        const box = document.createElement('div');
        box.append(renderMarkdown(arguments[0]));
        return box.innerHTML;
        """,
        text,
    )
    return html


LINK = 'target="_blank" rel="noopener noreferrer"'
COPY = '<button class="copy" type="button" title="Copy the code">Copy</button>'

MARKDOWN = [
    ("Hello *world*, **bold**, `code`.",
     "<p>Hello <em>world</em>, <strong>bold</strong>, <code>code</code>.</p>"),
    ("***both*** ~~gone~~", "<p><strong><em>both</em></strong> <del>gone</del></p>"),
    ("line one\nline two\n\nnext", "<p>line one<br>line two</p><p>next</p>"),
    ("# Title\n## Sub ##\n#hashtag", "<h1>Title</h1><h2>Sub</h2><p>#hashtag</p>"),
    ("- a\n- b\n  - c\n- d", "<ul><li>a</li><li>b<ul><li>c</li></ul></li><li>d</li></ul>"),
    ("3. three\n4. four", '<ol start="3"><li>three</li><li>four</li></ol>'),
    ("Steps:\n1. one\n2. two", "<p>Steps:</p><ol><li>one</li><li>two</li></ol>"),
    ("In\n2024. it rained", "<p>In<br>2024. it rained</p>"),
    ("- a\n\n- b", "<ul><li><p>a</p></li><li><p>b</p></li></ul>"),
    ("1. **Step**\n\n   why\n2. next",
     "<ol><li><p><strong>Step</strong></p><p>why</p></li><li><p>next</p></li></ol>"),
    ("```python\nprint('<b>')\n```\nafter",
     f'<div class="code-block"><div class="code-head"><span class="lang">python</span>{COPY}</div>'
     "<pre><code>print('&lt;b&gt;')</code></pre></div><p>after</p>"),
    ("```\nstill streaming",
     f'<div class="code-block"><div class="code-head"><span class="lang"></span>{COPY}</div>'
     "<pre><code>still streaming</code></pre></div>"),
    ("> quoted\n> more", "<blockquote><p>quoted<br>more</p></blockquote>"),
    ("a\n\n---\n\nb", "<p>a</p><hr><p>b</p>"),
    ("| a | b |\n|:--|--:|\n| 1 | 2 |",
     '<div class="table-wrap"><table><thead><tr><th style="text-align: left;">a</th>'
     '<th style="text-align: right;">b</th></tr></thead><tbody><tr><td style="text-align: left;">'
     '1</td><td style="text-align: right;">2</td></tr></tbody></table></div>'),
    ('[docs](https://example.com/a_(b) "T")',
     f'<p><a href="https://example.com/a_(b)" {LINK} title="T">docs</a></p>'),
    ("[me](mailto:me@example.com)", f'<p><a href="mailto:me@example.com" {LINK}>me</a></p>'),
    ("[a \\] [b](https://x.org)", f'<p>[a ] <a href="https://x.org" {LINK}>b</a></p>'),
    ("[**bold** https://a.org](https://b.org)",
     f'<p><a href="https://b.org" {LINK}><strong>bold</strong> https://a.org</a></p>'),
    ("<https://example.com> and https://example.com/x.",
     f'<p><a href="https://example.com" {LINK}>https://example.com</a> and '
     f'<a href="https://example.com/x" {LINK}>https://example.com/x</a>.</p>'),
    ("snake_case_name, 2 * 3 * 4, \\*not em\\*", "<p>snake_case_name, 2 * 3 * 4, *not em*</p>"),
    ("**unclosed and `open", "<p>**unclosed and `open</p>"),
    ("`a <b>` and ``x ` y``", "<p><code>a &lt;b&gt;</code> and <code>x ` y</code></p>"),
    # Markup and unsafe links are text: shown as written, never elements or links.
    ('<img src=x onerror="alert(1)"><script>alert(2)</script>',
     '<p>&lt;img src=x onerror="alert(1)"&gt;&lt;script&gt;alert(2)&lt;/script&gt;</p>'),
    ("[x](javascript:alert(1)) [y](JaVaScRiPt:alert(1)) [z](/relative) [d](data:text/html,x)",
     "<p>[x](javascript:alert(1)) [y](JaVaScRiPt:alert(1)) [z](/relative) [d](data:text/html,x)"
     "</p>"),
    ("<javascript:alert(1)> [a]( javascript:alert(1))",
     "<p>&lt;javascript:alert(1)&gt; [a]( javascript:alert(1))</p>"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "html"), MARKDOWN)
def test_markdown(renderer: Page, text: str, html: str) -> None:
    assert markdown_html(renderer, text) == html


ANSWER = "Paris is sunny and warm today, a fine day for a walk by the river."
MARKDOWN_ANSWER = """### Your day in Paris

It will be **sunny**, so:

- walk by the *river*
- see [the forecast](https://example.com/paris)

```python
print("21°C")
```
"""


def test_an_answer_is_drawn_as_markdown_and_its_code_copies(browser: Any, chat_server: Any) -> None:
    page = Page(browser, chat_server([text_reply(MARKDOWN_ANSWER)]).url)
    page.ask("Plan my day")
    page.until(lambda a: a["state"] == "done")
    answer = page.js(
        """
        const msg = document.querySelector('article.msg.assistant .answer-text');
        const a = msg.querySelector('a');
        return {
          heading: msg.querySelector('h3').textContent,
          strong: msg.querySelector('p strong').textContent,
          items: [...msg.querySelectorAll('ul > li')].map((li) => li.textContent),
          link: [a.getAttribute('href'), a.target, a.rel],
          code: msg.querySelector('.code-block pre code').textContent,
        };
        """
    )
    assert answer == {
        "heading": "Your day in Paris",
        "strong": "sunny",
        "items": ["walk by the river", "see the forecast"],
        "link": ["https://example.com/paris", "_blank", "noopener noreferrer"],
        "code": 'print("21°C")',
    }

    # The clipboard of a headless browser is not the test's to read: the page's is recorded.
    page.js(
        """
        window.copied = [];
        Object.defineProperty(navigator, 'clipboard', {
          configurable: true, value: {writeText: async (text) => { window.copied.push(text); }},
        });
        document.querySelector('.code-block button.copy').click();
        """
    )
    copied = page.until_js(
        "const b = document.querySelector('.code-block button.copy');"
        "return b.textContent === 'Copied' && window.copied;"
    )
    assert copied == ['print("21°C")']


PWNED = "window.pwned = (window.pwned || []).concat"
QUESTION = f"<img src=x onerror=\"{PWNED}('question')\"> <script>{PWNED}('script')</script> hi"
INJECTED = (
    f"<img src=x onerror=\"{PWNED}('answer')\"> and [click](javascript:{PWNED}('link')) "
    f"and <a href=\"javascript:{PWNED}('a')\">raw</a>"
)


def test_markup_in_a_question_and_in_an_answer_stays_inert(browser: Any, chat_server: Any) -> None:
    page = Page(browser, chat_server([text_reply(INJECTED)]).url)
    page.ask(QUESTION)
    page.until(done)  # an <img> the text asked for would have failed by now
    check = """
        const box = document.getElementById('messages');
        return {
          images: [...box.querySelectorAll('img')].map((i) => i.className),
          scripts: box.querySelectorAll('script').length,
          links: box.querySelectorAll('a').length,
          pwned: window.pwned || null,
          question: box.querySelector('article.user .user-text').textContent,
          answer: box.querySelector('article.assistant .answer-text').textContent,
        };
    """
    for _ in ("as streamed", "as redrawn from the saved transcript"):
        shown = page.js(check)
        assert shown == {
            "images": ["marble-svg"],  # the run's own diagram, nothing the text asked for
            "scripts": 0,
            "links": 0,
            "pwned": None,
            "question": QUESTION,
            "answer": INJECTED,
        }
        page.driver.refresh()
        page.until(done)


# What the reader sees at the next paint: the page re-pins its end in a ResizeObserver, which
# runs in the frame after a change (an image that just loaded), so the view is read two frames on.
VIEW = """
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    const box = document.getElementById('messages');
    const frame = box.getBoundingClientRect();
    const articles = box.querySelectorAll('article');
    const question = [...box.querySelectorAll('article.user')].pop().getBoundingClientRect();
    const end = articles[articles.length - 1].getBoundingClientRect().bottom;
    return {
      question: question.top >= frame.top - 1 && question.bottom <= frame.bottom + 1,
      end: end <= frame.bottom + 1,
      top: box.scrollTop,
      follow: box.dataset.follow,
      long: box.scrollHeight > 1.5 * box.clientHeight,
    };
"""


def done(answer: dict[str, Any]) -> bool:
    """The answer ended and its marble diagram has loaded (the last thing to change size)."""
    return answer["state"] == "done" and answer["marbles"] > 0


LONG_ANSWER = "\n".join(f"{n}. Step {n}: one line of a long answer." for n in range(1, 61))


def test_the_transcript_follows_the_stream_unless_the_reader_scrolled_up(
    browser: Any, chat_server: Any
) -> None:
    gate = Gate()
    reply = text_reply(ANSWER)
    script = [text_reply(LONG_ANSWER), gate.reply(reply[:4], reply[4:]), text_reply("Third.")]
    page = Page(browser, chat_server(script).url)

    page.ask("Plan my day")
    page.until(done)
    first = page.js(VIEW)
    assert first["long"]
    assert first["end"]  # the marble image loaded after the last render: followed too

    page.ask("And tomorrow?")
    page.until(lambda a: a["text"] == "Paris is sunny ")
    streaming = page.js(VIEW)
    assert streaming["question"] and streaming["end"] and streaming["follow"] == "true"

    # The reader scrolls up during the stream: the rest of it arrives without moving the page.
    page.js("const box = document.getElementById('messages'); box.scrollTop -= 400;")
    page.until_js("return document.getElementById('messages').dataset.follow === 'false'")
    top = page.js(VIEW)["top"]
    gate.open()
    page.until(lambda a: done(a) and a["text"] == ANSWER)
    read = page.js(VIEW)
    assert abs(read["top"] - top) <= 1 and not read["end"] and read["follow"] == "false"

    # A new question is what the reader wants to see, wherever they were.
    page.ask("And the day after?")
    page.until(lambda a: done(a) and a["text"] == "Third.")
    last = page.js(VIEW)
    assert last["question"] and last["end"] and last["follow"] == "true"
