"""Every Python example of every page in docs/ runs, as written, in order.

Pages whose examples need more than the weather desk (a Redis server, output compared line by
line) have a test file of their own, listed in :data:`OWN_TEST`; every other page runs here
exactly as the README does (:mod:`test_examples`): one namespace per page, the loopback weather
desk as the model, a fresh working directory, ``<!-- readme-test: ... -->`` needs honoured.
A new page is run here without anyone adding it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from test_examples import markdown_blocks, mock_model, run_block

from rxreact.testing import MockOpenAIServer

__all__ = ["mock_model"]  # the fixture, imported for the tests below

DOCS = Path(__file__).resolve().parents[1] / "docs"
OWN_TEST = {
    "conversations.md": "test_docs_conversations.py",
    "ecosystem.md": "test_docs_ecosystem.py",
    "runs.md": "test_docs_runs.py",
    "redis.md": "test_docs_redis.py",
}
"""Pages run by a test file of their own."""

PAGES = sorted(p.name for p in DOCS.glob("*.md") if p.name not in OWN_TEST)


def test_every_page_with_examples_is_run() -> None:
    for page, test in OWN_TEST.items():
        assert (DOCS / page).exists(), page
        source = (Path(__file__).parent / test).read_text()
        assert f'"{page}"' in source, f"{test} does not run docs/{page}"
    assert "validation.md" in PAGES and "serve.md" in PAGES


@pytest.mark.integration
@pytest.mark.parametrize("page", PAGES)
def test_page_runs_as_written(
    page: str, mock_model: MockOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = markdown_blocks(DOCS / page)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for block in blocks:
        run_block(block, namespace, monkeypatch)


def test_pages_speak_to_users() -> None:
    """No pointer a reader cannot follow (the project's issue numbers, "the seed", shared/), in
    the pages and the notebooks."""
    root = DOCS.parent
    pages = [*DOCS.glob("*.md"), *(root / "notebooks").glob("*.ipynb")]
    pages += [root / name for name in ("README.md", "BENCHMARKS.md", "RELIABILITY.md")]
    for path in pages:
        text = path.read_text(encoding="utf-8")
        for pattern in (r"\b[Ii]ssue \d+", r"\b[Tt]he (?:\w+ )?seed's\b", r"\bshared/"):
            found = re.search(pattern, text)
            assert found is None, f"{path.name}: {found[0] if found else ''!r}"
