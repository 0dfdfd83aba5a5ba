"""Every Python example in README.md and in rxreact's docstrings runs as written.

README blocks run in order in one namespace (a reader types them one after another), with
the loopback mock server playing :func:`rxreact.testing.weather_desk` as the model
(``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``RXREACT_MODEL``; no key; what
``rxreact mock --weather`` serves) and a fresh working directory. An HTML comment just before
a block declares what it needs::

    <!-- readme-test: redis -->        a running redis-server, its URL in $REDIS_URL
    <!-- readme-test: postgres -->     a running postgres, an empty database's DSN in $POSTGRES_DSN
    <!-- readme-test: skip -->         not run (say why in the text around it)

Docstring examples (``::`` literal blocks that use rxreact) run one by one in a fresh
namespace, and any ``test_*`` function they define is called. See CONTRIBUTING.md.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import pkgutil
import re
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from postgres_server import shared_postgres_server
from redis_server import running_redis_server

import rxreact
from rxreact.testing import MockOpenAIServer, weather_desk

ROOT = Path(__file__).resolve().parent.parent
NEEDS_COMMENT = re.compile(r"<!--\s*readme-test:\s*(?P<needs>[\w ,-]*?)\s*-->")


@dataclass(frozen=True)
class Block:
    """One example: its code, where it is, and what it declared it needs."""

    code: str
    where: str
    line: int
    needs: frozenset[str]


def markdown_blocks(path: Path) -> list[Block]:
    """The ```python blocks of a Markdown file, with the needs declared just before each."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    previous = ""
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i + 1
            end = start
            while lines[end].strip() != "```":
                end += 1
            match = NEEDS_COMMENT.fullmatch(previous.strip())
            needs = frozenset(re.split(r"[\s,]+", match["needs"])) - {""} if match else frozenset()
            code = "\n".join(lines[start:end])
            blocks.append(Block(code, path.name, start + 1, needs))
            i = end
        if lines[i].strip():
            previous = lines[i]
        i += 1
    return blocks


def literal_blocks(doc: str) -> Iterator[str]:
    """The reST literal blocks (after a line ending in ``::``) of a docstring, dedented."""
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].rstrip().endswith("::"):
            i += 1
            continue
        indent = len(lines[i]) - len(lines[i].lstrip())
        j = i + 1
        block: list[str] = []
        while j < len(lines) and (
            not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent
        ):
            block.append(lines[j])
            j += 1
        yield textwrap.dedent("\n".join(block)).strip("\n")
        i = j


def docstring_examples() -> list[Block]:
    """Literal blocks of rxreact's docstrings that are Python using rxreact (not diagrams)."""
    modules = [rxreact] + [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(rxreact.__path__, "rxreact.")
        if info.name != "rxreact.__main__"
    ]
    found: dict[str, Block] = {}
    for module in modules:
        objects: list[Any] = [module]
        for _, member in inspect.getmembers(module):
            if getattr(member, "__module__", None) == module.__name__:
                objects.append(member)
                if inspect.isclass(member):
                    objects.extend(vars(member).values())
        for obj in objects:
            for code in literal_blocks(inspect.getdoc(obj) or ""):
                if "rxreact" not in code:
                    continue
                try:
                    compile(code, "<example>", "exec")
                except SyntaxError:
                    continue  # a diagram or a fragment, not a program
                name = getattr(obj, "__qualname__", module.__name__)
                found.setdefault(code, Block(code, f"{module.__name__}:{name}", 1, frozenset()))
    return list(found.values())


# -- needs ------------------------------------------------------------------------------------


@contextlib.contextmanager
def _redis(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with running_redis_server() as server:
        monkeypatch.setenv("REDIS_URL", server.url)
        yield


@contextlib.contextmanager
def _postgres(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    server = shared_postgres_server()
    monkeypatch.setenv("POSTGRES_DSN", server.dsn(server.new_database()))
    yield


NEEDS: dict[str, Callable[[pytest.MonkeyPatch], contextlib.AbstractContextManager[None]]] = {
    "redis": _redis,
    "postgres": _postgres,
}
"""What a block may declare in ``<!-- readme-test: ... -->`` (besides ``skip``)."""


def run_block(block: Block, namespace: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    unknown = block.needs - set(NEEDS) - {"skip"}
    assert not unknown, f"{block.where}:{block.line}: unknown readme-test needs {sorted(unknown)}"
    if "skip" in block.needs:
        return
    # Padding keeps a traceback's line numbers those of the file.
    code = compile("\n" * (block.line - 1) + block.code, block.where, "exec")
    with contextlib.ExitStack() as stack:
        for need in sorted(block.needs):
            stack.enter_context(NEEDS[need](monkeypatch))
        before = set(namespace)
        exec(code, namespace)
        for name in sorted(set(namespace) - before):
            if name.startswith("test_") and callable(namespace[name]):
                namespace[name]()


@pytest.fixture
def mock_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MockOpenAIServer]:
    """The examples' endpoint, environment and working directory."""
    with MockOpenAIServer(weather_desk) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.origin)
        monkeypatch.setenv("OLLAMA_BASE_URL", server.base_url)
        monkeypatch.setenv("RXREACT_MODEL", "mock")
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        monkeypatch.chdir(tmp_path)
        yield server


def test_the_needs_comment_is_read(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```python\na = 1\n```\n\n<!-- readme-test: redis, skip -->\n```python\nb\n```\n"
    )
    first, second = markdown_blocks(page)
    assert (first.code, first.line, first.needs) == ("a = 1", 4, frozenset())
    assert (second.code, second.line, second.needs) == ("b", 9, {"redis", "skip"})


@pytest.mark.integration
def test_a_block_that_needs_redis_gets_a_running_server(
    tmp_path: Path, mock_model: MockOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- readme-test: redis -->\n```python\n"
        "import os\n"
        "from rxreact import RedisChatMemory, UserMessage\n"
        "memory = RedisChatMemory(os.environ['REDIS_URL'])\n"
        "memory.append('c', [UserMessage(content='hi')])\n"
        "loaded = memory.load('c')\n"
        "```\n"
    )
    namespace: dict[str, Any] = {}
    run_block(markdown_blocks(page)[0], namespace, monkeypatch)
    assert [m.content for m in namespace["loaded"]] == ["hi"]


@pytest.mark.integration
def test_readme_runs_as_written(
    mock_model: MockOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = markdown_blocks(ROOT / "README.md")
    assert blocks, "README.md has no python blocks"
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    for block in blocks:
        run_block(block, namespace, monkeypatch)
    assert mock_model.requests, "the README's examples never reached the model"


EXAMPLES = docstring_examples()


@pytest.mark.integration
@pytest.mark.parametrize("block", EXAMPLES, ids=[b.where for b in EXAMPLES])
def test_docstring_example_runs(
    block: Block, mock_model: MockOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_block(block, {"__name__": "__example__"}, monkeypatch)
