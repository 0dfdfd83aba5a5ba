"""The model layer: the ChatModel contract and its implementations, one room each.

- :mod:`~rxreact.model.base` (the :class:`ChatModel` protocol) and
  :mod:`~rxreact.model.chunks` (what a stream carries): the contract every model keeps;
  :mod:`~rxreact.model.assembly` turns chunks into whole responses.
- :mod:`~rxreact.model.retry_policy` (:class:`Backoff`: when to retry and how long to wait) and
  :mod:`~rxreact.model.retrying_model` (:class:`RetryingModel`: that policy around any model).
- :mod:`rxreact.model.http`: the HTTP+SSE transport every adapter shares (both I/O modes,
  retries, timeouts, cancellation); an adapter is a wire format on it.
- :mod:`rxreact.model.openai`: OpenAI's wire formats (chat completions, Responses).
- :mod:`rxreact.model.anthropic`: Anthropic's Messages API (:class:`AnthropicModel`).
- :mod:`rxreact.model.scripted`: :class:`ScriptedModel` and the reply vocabulary it plays.
"""
