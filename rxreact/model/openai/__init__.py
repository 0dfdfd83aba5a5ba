"""OpenAI's wire formats on the shared transport (:mod:`rxreact.model.http`).

- :mod:`~rxreact.model.openai.client`: :class:`OpenAIChatModel`, any OpenAI-compatible
  ``/chat/completions`` endpoint; its codec: :mod:`~rxreact.model.openai.request_codec`
  (request → JSON body) and :mod:`~rxreact.model.openai.wire` (JSON → chunks).
"""
