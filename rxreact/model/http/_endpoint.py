"""Where one model's requests go and how one is sent: :class:`Endpoint`.

The URL, the API key (never shown: :class:`Secret`), the headers, the model's HTTP clients, and
one POST with its answer's headers checked and every failure mapped to :mod:`rxreact.errors`,
in thread mode (:meth:`Endpoint.exchange`) and on the I/O loop (:meth:`Endpoint.aexchange`).
The wire format decides nothing here but the headers its key travels in.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

import httpx

from rxreact.errors import ConfigurationError
from rxreact.model.http._aio import LoopCall
from rxreact.model.http._call import ModelCall, Timeouts
from rxreact.model.http._clients import ModelClients, no_tls
from rxreact.model.http._errors import status_error, transport_error
from rxreact.model.http._pooled import pooled_socket
from rxreact.model.http._reclaim import reclaim
from rxreact.model.http._thread_call import ThreadCall

__all__ = ["Endpoint", "Secret", "is_loopback"]

log: logging.Logger = logging.getLogger("rxreact.model.http")


class Secret:
    """Holds the API key; its repr never shows it (so ``vars(model)`` is safe to print)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"


class Endpoint:
    """One model's endpoint: ``url`` is what every request POSTs to.

    Args:
        url: the full URL (base URL and the wire format's path).
        base_url: the API root, named in messages.
        api_key: the key, or ``None`` (then only a loopback host is served).
        key_env: the environment variable a missing-key message names.
        auth_headers: the headers that carry the key (the wire format's): the model's method,
            held weakly (the model holds its endpoint: a strong one would be a cycle).
        headers: extra headers sent with every request.
        timeouts: for transport errors' messages.
        http_client: the user's client, else ours are made as needed.
    """

    __slots__ = (
        "_auth_headers",
        "_headers",
        "_origin",
        "_timeouts",
        "base_url",
        "clients",
        "key",
        "key_env",
        "keyless_ok",
        "signer",
        "target",
        "url",
        "whole_target",
    )

    def __init__(
        self,
        url: str,
        base_url: str,
        api_key: str | None,
        key_env: str,
        auth_headers: Callable[[str], dict[str, str]],
        headers: Mapping[str, str],
        timeouts: Timeouts,
        http_client: httpx.Client | httpx.AsyncClient | None,
    ) -> None:
        parsed = httpx.URL(base_url)
        self.url = url
        self.target = httpx.URL(url)
        """``url`` parsed once: httpx parses a string URL at every request (some sixty Python
        calls), and the pool lookups after an attempt parsed it again."""
        self.signer: weakref.WeakMethod[Any] | None = None
        """Signs each request (:meth:`sign_with`), or ``None``."""
        self.whole_target: httpx.URL | None = None
        """Where whole (non-streaming) requests go when that is not ``url`` (:meth:`retarget`)."""
        self.base_url = base_url
        self._origin = f"{parsed.host}:{parsed.port or (443 if parsed.scheme == 'https' else 80)}"
        self.key = Secret(api_key) if api_key else None
        self.key_env = key_env
        """The variable a missing-key error names (a ``provider:model`` preset sets its own)."""
        self.keyless_ok = is_loopback(parsed.host)
        self._auth_headers = weakref.WeakMethod(auth_headers)
        self._headers = dict(headers)
        self._timeouts = timeouts
        # A local server over plain HTTP: no CA bundle to read for our clients.
        plain_local = self.keyless_ok and parsed.scheme == "http"
        self.clients = ModelClients(
            http_client, no_tls if plain_local else httpx.create_ssl_context
        )
        """The user's client, else many small pools of our own, made on first use."""

    def sign_with(self, signer: Callable[[str, dict[str, str], bytes], dict[str, str]]) -> None:
        """Sign every request: ``signer(url, headers, body)`` returns the headers to send (AWS's
        SigV4 signs the method, URL, headers and body hash of each request; no key is then
        needed). Held weakly, as ``auth_headers`` is."""
        self.signer = weakref.WeakMethod(signer)

    def retarget(self, url: str, whole_url: str) -> None:
        """Send streamed requests to ``url`` and whole ones to ``whole_url``: for a wire format
        whose path names the model and the kind of answer (Gemini's ``models/{model}:
        streamGenerateContent?alt=sse`` and ``:generateContent``), on the same origin."""
        self.url, self.target = url, httpx.URL(url)
        self.whole_target = httpx.URL(whole_url)

    @contextlib.contextmanager
    def exchange(
        self, call: ThreadCall[Any], content: bytes, *, stream: bool
    ) -> Iterator[httpx.Response]:
        """POST the body; yield the 2xx response, abortable by the call; map every failure."""
        request = self._request(call, content, stream)
        request["extensions"]["trace"] = call.trace
        client, shards, shard = self.clients.sync()
        call.locate = functools.partial(pooled_socket, client, self.target, call.httpx_timeout)
        response: httpx.Response | None = None
        try:
            with client.stream(**request) as response, call.attached(response):
                if response.status_code >= 400:
                    raise status_error(response, self.redact)
                yield response
        except httpx.HTTPError as exc:
            raise transport_error(
                exc, self._origin, self._timeouts, call.phase, self.redact
            ) from exc
        finally:
            if response is not None:
                _forget_stream(response)
            if shards is not None and shard is not None:
                shards.release(shard)

    @contextlib.asynccontextmanager
    async def aexchange(
        self, call: LoopCall[Any], content: bytes, *, stream: bool
    ) -> AsyncIterator[httpx.Response]:
        """:meth:`exchange` on the I/O loop (a cancelled task is what aborts it)."""
        request = self._request(call, content, stream)
        client, shards, shard = self.clients.asynchronous()
        response: httpx.Response | None = None
        try:
            # What ``client.stream`` does, without its async context manager: that kept an
            # async generator, its context manager, a bound method and a weak reference in the
            # loop's registry for as long as the response was read (per live stream).
            response = await client.send(client.build_request(**request), stream=True)
            try:
                call.headers_in()
                if response.status_code >= 400:
                    await response.aread()
                    raise status_error(response, self.redact)
                yield response
            finally:
                await response.aclose()
        except httpx.HTTPError as exc:
            raise transport_error(
                exc, self._origin, self._timeouts, call.phase, self.redact
            ) from exc
        finally:
            if response is not None:
                _forget_stream(response)
            # Also (above all) after a cancellation: httpcore may have lost a pool slot.
            reclaim(client, self.target, call.httpx_timeout)
            if shards is not None and shard is not None:
                shards.release(shard)

    def _request(self, call: ModelCall[Any], content: bytes, stream: bool) -> dict[str, Any]:
        """The arguments of ``client.stream`` for one attempt."""
        headers = self.headers_for(stream)
        log.debug("POST %s (stream=%s)", self.url, stream)
        whole = None if stream else self.whole_target
        url = self.target if whole is None else whole
        if self.signer is not None:
            signer = self.signer()
            if signer is not None:
                headers = signer(str(url), headers, content)
        return {
            "method": "POST",
            "url": url,
            "content": content,
            "headers": headers,
            "extensions": {"timeout": call.httpx_timeout},
        }

    def headers_for(self, stream: bool) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if stream else "application/json",
        }
        if self.key is not None:
            auth = self._auth_headers()
            if auth is not None:
                headers.update(auth(self.key.reveal()))
        elif not self.keyless_ok and self.signer is None:
            raise ConfigurationError(
                f"no API key for {self.base_url}: pass api_key=... or set {self.key_env}"
            )
        headers.update(self._headers)
        return headers

    def redact(self, text: str) -> str:
        if self.key is not None:
            text = text.replace(self.key.reveal(), "***")
        return text


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_CLOSED_STREAM = httpx.ByteStream(b"")


def _forget_stream(response: httpx.Response) -> None:
    """Break httpx's reference cycle response -> stream -> response once the response is closed.

    Left alone, the response with its request, headers and stream wrappers (some forty objects
    per request) waits for the cycle collector, and at thousands of concurrent runs that is
    heap every collection walks; unlinked, it is freed as soon as the last reference goes.
    """
    response.stream = _CLOSED_STREAM
