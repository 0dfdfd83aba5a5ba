"""Scripted models, for tests, demos and notebooks.

- :mod:`~rxreact.model.scripted.replies`: the reply vocabulary and its builders
  (``text_reply``, ``tool_call_reply``, ``Pause``, ``Fail`` …), shared with
  :class:`~rxreact.testing.MockOpenAIServer`;
- :mod:`~rxreact.model.scripted.model`: :class:`ScriptedModel`, which plays those replies
  back in (virtual) time.
"""
