"""``rxreact.serve`` has a room per protocol (``ui_stream/``, ``ag_ui/``, ``a2a/``,
``openai_compat/``) with what they share beside them: every module path and name users import
from before the rooms still resolves, no room imports another (nor does what they share), a
protocol's mapping loads no Starlette, and the chat page's files are where the app serves them
from."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

OLD_PATHS: dict[str, list[str]] = {
    "rxreact.serve": [
        "DONE",
        "UIChunk",
        "UI_MESSAGE_STREAM_HEADERS",
        "create_app",
        "to_chat_completion_chunks",
        "to_ui_message_stream",
    ],
    "rxreact.serve.ui_stream": [
        "DONE",
        "UIChunk",
        "UI_MESSAGE_STREAM_HEADERS",
        "to_ui_message_stream",
    ],
    "rxreact.serve.ag_ui": ["AGUIChunk", "APPROVAL_REASON", "to_ag_ui_events"],
    "rxreact.serve.a2a": [
        "A2AUpdate",
        "ANSWER_ARTIFACT",
        "apply_update",
        "new_task",
        "to_a2a_events",
    ],
    "rxreact.serve.openai_compat": ["chat_completion", "error_body", "to_chat_completion_chunks"],
    "rxreact.serve.auth": ["MIN_TOKEN_CHARS", "RunIds", "TokenAuthenticator", "conversation_key"],
    "rxreact.serve.app": ["STATIC_DIR", "create_app"],
    "rxreact.serve.cli": [
        "CONFIG_ENV",
        "add_serve_command",
        "app_from_env",
        "is_loopback",
        "serve",
        "served_hosts",
    ],
    "rxreact.serve.deadline": [
        "DEFAULT_REQUEST_DEADLINE",
        "H11WithDeadline",
        "with_request_deadline",
    ],
}
"""Each public module of ``rxreact.serve`` and its ``__all__`` as they were before the rooms."""

ALSO_IMPORTED = {
    "rxreact.serve.ui_stream": ["Part", "error_text"],
    "rxreact.serve.openai_compat": ["sse_data", "usage_of"],
    "rxreact.serve.a2a": ["MAX_TOOL_TEXT", "TERMINAL_STATES"],
}
"""Names outside ``__all__`` that the tests and docs import from the old paths."""


@pytest.mark.parametrize("path", sorted(OLD_PATHS))
def test_every_old_public_path_and_its_names_resolve(path: str) -> None:
    module = importlib.import_module(path)
    assert set(OLD_PATHS[path]) <= set(module.__all__)
    for name in [*module.__all__, *ALSO_IMPORTED.get(path, [])]:
        assert getattr(module, name) is not None, f"{path}.{name}"


def test_the_package_and_its_rooms_give_the_same_objects() -> None:
    import rxreact.serve
    from rxreact.serve import openai_compat, ui_stream

    assert rxreact.serve.UIChunk is ui_stream.UIChunk
    assert rxreact.serve.DONE is ui_stream.DONE
    assert rxreact.serve.to_chat_completion_chunks is openai_compat.to_chat_completion_chunks
    assert rxreact.serve.create_app is importlib.import_module("rxreact.serve.app").create_app


ROOMS = ("ui_stream", "ag_ui", "a2a", "openai_compat")
SERVE = Path(__file__).parent.parent / "rxreact" / "serve"
ABOVE_THE_ROOMS = {"__init__.py", "app.py", "_protocols.py"}
"""The public face, the app and the table that mounts the protocols: they import the rooms."""


def imported(file: Path) -> set[str]:
    """The modules ``file`` imports, at its top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_room_imports_another_and_nothing_shared_imports_a_room() -> None:
    wrong = []
    for file in sorted(SERVE.rglob("*.py")):
        place = file.relative_to(SERVE).parts
        room = place[0] if len(place) > 1 else None
        if room is None and place[0] in ABOVE_THE_ROOMS:
            continue
        for name in imported(file):
            parts = name.split(".")
            other_room = parts[2] if parts[:2] == ["rxreact", "serve"] and len(parts) > 2 else None
            if other_room in ROOMS and other_room != room:
                wrong.append(f"{'/'.join(place)} imports {name}")
    assert {room for room in ROOMS if (SERVE / room / "__init__.py").is_file()} == set(ROOMS)
    assert not wrong, wrong


def test_the_mappings_load_neither_starlette_nor_a_route() -> None:
    code = """
import json, sys
import rxreact.serve.ui_stream, rxreact.serve.openai_compat, rxreact.serve.ag_ui
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("rxreact.serve", "starlette")))))
"""
    # a2a is left out: a2a-sdk's own modules import Starlette (its mapping does not).
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert {f"rxreact.serve.{room}" for room in ROOMS if room != "a2a"} <= set(loaded)
    assert not [m for m in loaded if m.startswith("starlette") or m.endswith("._routes")], loaded


def test_the_chat_page_files_are_where_the_app_serves_them_from() -> None:
    import rxreact.serve
    from rxreact.serve.app import STATIC_DIR

    assert Path(rxreact.serve.__file__).parent / "static" == STATIC_DIR
    for name in ("index.html", "chat.js", "auth.js", "markdown.js"):
        assert (STATIC_DIR / name).is_file(), name
