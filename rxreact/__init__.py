"""rxreact: a streaming ReAct agent built as ReactiveX pipelines."""

from rxreact.errors import *  # noqa: F403  (filled in as the public API lands)
