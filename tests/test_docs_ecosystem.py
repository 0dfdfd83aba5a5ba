"""The examples of docs/ecosystem.md run as written and print what the page says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "ecosystem.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def _expected(code: str) -> list[str]:
    """The ``# ...`` lines after the last ``print(``: the output the page promises."""
    lines = code.splitlines()
    last = max(i for i, line in enumerate(lines) if line.lstrip().startswith("print("))
    return [line[2:] for line in lines[last + 1 :] if line.startswith("# ")]


@pytest.mark.integration
def test_every_example_prints_what_the_page_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    ran = 0
    for code in BLOCKS:
        first = code.splitlines()[0]
        if first.startswith("# ") and first.endswith(".py"):  # a file the next examples use
            (tmp_path / first[2:]).write_text(code)
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(DOC), "exec"), {"__name__": "docs_example"})
        assert out.getvalue().splitlines() == _expected(code), code
        ran += 1
    assert ran == 5
