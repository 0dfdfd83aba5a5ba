"""Gemini's native wire format on the shared transport (:mod:`rxreact.model.http`).

:mod:`~rxreact.model.gemini.client`: :class:`GeminiModel`; its codec:
:mod:`~rxreact.model.gemini.request_codec` (request → JSON body, with the tool schemas as
Gemini takes them: :mod:`~rxreact.model.gemini._schema`) and :mod:`~rxreact.model.gemini.wire`
(``GenerateContentResponse`` s → chunks).
"""

from rxreact.model.gemini.client import GeminiModel

__all__ = ["GeminiModel"]
