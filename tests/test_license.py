"""The package says it is MIT licensed: the LICENSE file next to pyproject.toml says so too."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_license_file_is_the_mit_license_pyproject_names() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    text = (ROOT / "LICENSE").read_text()
    assert project["license"] == "MIT"
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the rxreact authors" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text
