"""The HTTP transport every model adapter shares: one POST, its SSE answer, as an Observable.

- :mod:`~rxreact.model.http.model`: :class:`HTTPChatModel`, the base of every adapter (a
  wire format subclasses it with its body encoder and its stream parser);
- :mod:`~rxreact.model.http.codec`: :class:`StreamParser`, what a wire format's parser is;
  :mod:`~rxreact.model.http.wire_errors`: provider error JSON as :mod:`rxreact.errors`;
- :mod:`~rxreact.model.http.sse` (bytes → events), :mod:`~rxreact.model.http.think`
  (``<think>`` in answer text), :mod:`~rxreact.model.http.surrogates` (surrogate pairs split
  across deltas), :mod:`~rxreact.model.http.limits` (the size caps and their defaults);
- private: ``_endpoint`` (where requests go, the key, one POST in either mode),
  ``_exchange`` (one request's subscription and attempts), ``_call`` (attempts, retries,
  watchdog), ``_thread_call`` (thread mode), ``_aio``
  (loop mode) with ``_admission`` (its overload queue) and ``_asyncio_network`` (its sockets),
  ``_read_sse`` (the SSE read loop), ``_chunked`` (the chunked-body fast path), ``_clients``
  (the model's HTTP clients), ``_io_mode`` (choosing the mode), ``_errors`` (error responses
  and transport errors as :mod:`rxreact.errors`), ``_pooled`` (the socket of a reused
  connection before its headers), ``_reclaim`` (a cancelled attempt's pool slot).
"""
