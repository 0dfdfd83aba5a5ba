"""Start-up pays only for what it uses: ``rxreact --version`` and ``--help`` import a handful
of the package's modules (they imported 170 of them: 1-3 s on a busy machine), ``import
rxreact`` imports the names it is asked for, and every public name and old module path still
resolves. Counted in a fresh interpreter, not timed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

COUNT = """
import contextlib, io, json, sys
from rxreact.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(sys.argv[1:])
print(json.dumps(sorted(m for m in sys.modules if m == "rxreact" or m.startswith("rxreact."))))
"""

MOST = 12
"""rxreact modules ``--version`` and ``--help`` may import (9 today: the package, the parser's
modules, the errors)."""


def imported_by(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", COUNT, *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    modules: list[str] = json.loads(done.stdout.splitlines()[-1])
    return modules


@pytest.mark.parametrize(
    "args", [["--version"], ["--help"], ["serve", "--help"], ["eval", "--help"]]
)
def test_the_command_line_imports_a_handful_of_modules(args: list[str]) -> None:
    modules = imported_by(*args)
    assert len(modules) < MOST, modules
    assert not {"rxreact.agent", "rxreact.events", "rxreact.messages"} & set(modules)


def test_import_rxreact_pays_for_what_it_uses() -> None:
    code = """
import json, sys
import rxreact
first = sorted(m for m in sys.modules if m.startswith("rxreact"))
from rxreact import RunError
second = sorted(m for m in sys.modules if m.startswith("rxreact"))
print(json.dumps([first, second]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    first, second = json.loads(done.stdout)
    assert first == ["rxreact"]
    assert second == ["rxreact", "rxreact.errors"]


def test_every_public_name_and_old_path_resolves() -> None:
    import importlib

    import rxreact

    for name in rxreact.__all__:
        assert getattr(rxreact, name) is not None, name
    assert set(rxreact.__all__) <= set(dir(rxreact))
    from rxreact import checks

    assert importlib.import_module("rxreact.judge") is checks.judge
    assert rxreact.validation is importlib.import_module("rxreact.checks.validation")
    assert rxreact.runs.follow is rxreact.follow  # a subpackage, as an attribute
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        rxreact.nothing  # noqa: B018
