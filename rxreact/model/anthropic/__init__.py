"""Anthropic's native Messages API on the shared transport (:mod:`rxreact.model.http`).

- :mod:`~rxreact.model.anthropic.client`: :class:`AnthropicModel`; its codec:
  :mod:`~rxreact.model.anthropic.request_codec` (request → JSON body) and
  :mod:`~rxreact.model.anthropic.wire` (stream events → chunks) and
  :mod:`~rxreact.model.anthropic.message` (a whole message → a response).
"""

from rxreact.model.anthropic.client import AnthropicModel

__all__ = ["AnthropicModel"]
