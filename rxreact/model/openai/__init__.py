"""OpenAI's wire formats on the shared transport (:mod:`rxreact.model.http`).

- :mod:`~rxreact.model.openai.client`: :class:`OpenAIChatModel`, any OpenAI-compatible
  ``/chat/completions`` endpoint; its codec: :mod:`~rxreact.model.openai.request_codec`
  (request → JSON body) and :mod:`~rxreact.model.openai.wire` (JSON → chunks).
- :mod:`~rxreact.model.openai.responses`: :class:`OpenAIResponsesModel`, the ``/responses``
  API; its codec: :mod:`~rxreact.model.openai.responses_codec` (request → JSON body) and
  :mod:`~rxreact.model.openai.responses_wire` (events → chunks).
"""

from rxreact.model.openai.responses import OpenAIResponsesModel

__all__ = ["OpenAIResponsesModel"]
