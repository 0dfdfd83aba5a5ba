"""Serve runs to browsers: the Vercel AI SDK UI message stream, resumable, and a chat page.

::

    from rxreact import OpenAIChatModel, ReactAgent
    from rxreact.serve import create_app

    agent = ReactAgent(OpenAIChatModel())
    app = create_app(agent)            # an ASGI app: uvicorn module:app, or `rxreact serve`

Needs the ``serve`` extra (``pip install 'rxreact[serve]'``: Starlette and uvicorn);
the protocol mappings, :func:`to_ui_message_stream` (the AI SDK's UI message stream) and
:func:`to_chat_completion_chunks` (OpenAI chat completions), need neither.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rxreact.serve.app import create_app
    from rxreact.serve.openai_compat import to_chat_completion_chunks
    from rxreact.serve.ui_stream import (
        DONE,
        UI_MESSAGE_STREAM_HEADERS,
        UIChunk,
        to_ui_message_stream,
    )

__all__ = [
    "DONE",
    "UI_MESSAGE_STREAM_HEADERS",
    "UIChunk",
    "create_app",
    "to_chat_completion_chunks",
    "to_ui_message_stream",
]


_MAPPINGS = {
    "DONE": "rxreact.serve.ui_stream",
    "UI_MESSAGE_STREAM_HEADERS": "rxreact.serve.ui_stream",
    "UIChunk": "rxreact.serve.ui_stream",
    "to_ui_message_stream": "rxreact.serve.ui_stream",
    "to_chat_completion_chunks": "rxreact.serve.openai_compat",
}
"""Imported on first use, as everything here: ``rxreact serve --help`` (which imports
``rxreact.serve.cli``) loads neither the mappings nor the events they map."""


def __getattr__(name: str) -> Any:
    if name in _MAPPINGS:
        return getattr(importlib.import_module(_MAPPINGS[name]), name)
    # Starlette is imported only when the app is asked for.
    if name == "create_app":
        from rxreact.errors import ConfigurationError

        try:
            from rxreact.serve.app import create_app
        except ImportError as error:
            raise ConfigurationError(
                "rxreact.serve.create_app needs Starlette: pip install 'rxreact[serve]'"
            ) from error
        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
