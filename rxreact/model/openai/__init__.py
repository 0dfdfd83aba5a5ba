"""The OpenAI-compatible ``/chat/completions`` client, over httpx.

- :mod:`~rxreact.model.openai.client`: :class:`OpenAIChatModel`, the public face;
- the wire codec: :mod:`~rxreact.model.openai.request_codec` (request → JSON body),
  :mod:`~rxreact.model.openai.sse` (bytes → events), :mod:`~rxreact.model.openai.wire`
  (JSON → chunks), :mod:`~rxreact.model.openai.think` (``<think>`` in answer text),
  :mod:`~rxreact.model.openai.surrogates` (surrogate pairs split across deltas);
- :mod:`~rxreact.model.openai.limits`: the size caps and their defaults;
- the transport (private): ``_call`` (attempts, retries, watchdog), ``_thread_call`` (thread
  mode), ``_aio`` (loop mode) with ``_admission`` (its overload queue) and
  ``_asyncio_network`` (its sockets), ``_http_stream`` (the SSE read loop), ``_chunked`` (the
  chunked-body fast path), ``_clients`` (the model's HTTP clients), ``_io_mode`` (choosing the
  mode), ``_http_errors`` (error responses and transport errors as :mod:`rxreact.errors`),
  ``_pooled`` (the socket of a reused connection before its headers), ``_reclaim`` (a
  cancelled attempt's pool slot).
"""
