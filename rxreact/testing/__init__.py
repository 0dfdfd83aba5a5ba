"""Helpers for testing code built on rxreact: import them in your own tests."""

from rxreact.testing.mock_server import MockOpenAIServer

__all__ = ["MockOpenAIServer"]
