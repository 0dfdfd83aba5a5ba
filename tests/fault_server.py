"""A raw-socket HTTP/1.1 server on loopback that misbehaves on purpose (issue 11's faults).

Each request takes the next :class:`Fault` of the script (a list, or a function of the
request number). Connections are keep-alive, so a fault can hit a *reused* connection.
Unlike :class:`~rxreact.testing.MockOpenAIServer` nothing here is polite HTTP: headers can
trickle in a byte at a time, connections end with a TCP reset, bodies can be garbage,
endless, or one huge line. The server counts what clients did (requests, closed connections)
so tests wait on those events instead of sleeping.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Self

__all__ = ["Fault", "FaultServer", "ok", "read_request"]


@dataclass(frozen=True)
class Fault:
    """What the server does with one request.

    kind: ``ok`` (a whole SSE answer), ``trickle_headers`` (the status line and headers one
    byte every ``interval`` s, never finished), ``stall`` (nothing at all), ``stall_body``
    (headers, then nothing), ``reset`` (a TCP reset instead of an answer), ``reset_mid``
    (headers and an event, then a reset), ``garbage`` (a 200 body that is not SSE),
    ``huge_line`` (one SSE line of ``size`` bytes), ``status`` (``status`` with
    ``Retry-After: retry_after``), ``endless`` (text deltas every ``interval`` s, forever or,
    with ``size``, that many and then a cut), ``tool_call`` (a call of ``get_weather`` with
    ``{"city": text}``),
    ``no_finish`` (text, then the end of the body with neither ``[DONE]`` nor a finish),
    ``tool_call_cut`` (a call ``call_cut`` of ``get_weather`` half-way through its arguments,
    then a reset).
    """

    kind: str
    text: str = "ok"
    interval: float = 0.05
    size: int = 0
    status: int = 200
    retry_after: str | None = None


def ok(text: str = "ok") -> Fault:
    """A well-formed streamed answer."""
    return Fault("ok", text=text)


def _event(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _delta(content: str | None = None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    return _event({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


_SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n"
)


def read_request(conn: socket.socket, buffer: list[bytes]) -> bytes | None:
    """The body of the next request on ``conn`` (``buffer[0]`` keeps what was read past
    it), or ``None`` when the client closed the connection first."""
    data = buffer[0]
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return None
        data += more
    head, _, data = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(data) < length:
        more = conn.recv(65536)
        if not more:
            return None
        data += more
    buffer[0] = data[length:]
    return data[:length]


class FaultServer:
    """The server; a context manager. ``base_url`` is what a model points at."""

    def __init__(self, script: Sequence[Fault] | Callable[[int, bytes], Fault]) -> None:
        """``script``: the faults in request order, or ``script(number, body)`` for each
        request (``number`` from 0, ``body`` the request's JSON bytes)."""
        self._script = script
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self.requests = 0
        """Requests received so far."""
        self.closed_by_client = 0
        """Connections the client closed (or shut down) while the server held them."""

    @property
    def base_url(self) -> str:
        """The ``/v1`` root to give a model."""
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    def wait_for(self, predicate: Callable[[FaultServer], bool], timeout: float = 5.0) -> bool:
        """Wait until ``predicate(self)`` holds (re-checked on every count change)."""
        with self._lock:
            return self._lock.wait_for(lambda: predicate(self), timeout)

    def __enter__(self) -> Self:
        threading.Thread(target=self._accept, daemon=True, name="fault-server").start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._listener.close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    # -- internals ----------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._conns.add(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)
            self._lock.notify_all()

    def _next(self, body: bytes) -> Fault:
        with self._lock:
            number = self.requests
        script = self._script
        if callable(script):
            return script(number, body)
        return script[number] if number < len(script) else ok()

    def _serve(self, conn: socket.socket) -> None:
        buffer = [b""]
        try:
            while not self._stopping.is_set():
                body = read_request(conn, buffer)
                if body is None:
                    self._count("closed_by_client")
                    return
                fault = self._next(body)
                self._count("requests")
                if not self._answer(conn, fault):
                    return
        except OSError:
            self._count("closed_by_client")
        finally:
            with self._lock:
                self._conns.discard(conn)
            conn.close()

    def _answer(self, conn: socket.socket, fault: Fault) -> bool:
        """Answer one request; False when the connection is over."""
        kind = fault.kind
        if kind == "ok":
            body = _delta(fault.text) + _delta(None, "stop") + b"data: [DONE]\n\n"
            conn.sendall(_SSE_HEAD + _chunk(body) + b"0\r\n\r\n")
            return True
        if kind == "tool_call":
            call = {"index": 0, "id": "call_1", "type": "function"}
            call["function"] = {
                "name": "get_weather",
                "arguments": json.dumps({"city": fault.text}),
            }
            first = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}
            body = _event(first) + _delta(None, "tool_calls") + b"data: [DONE]\n\n"
            conn.sendall(_SSE_HEAD + _chunk(body) + b"0\r\n\r\n")
            return True
        if kind == "tool_call_cut":
            call = {"index": 0, "id": "call_cut", "type": "function"}
            call["function"] = {"name": "get_weather", "arguments": '{"city": "Os'}
            first = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}
            conn.sendall(_SSE_HEAD + _chunk(_event(first)))
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return False
        if kind == "status":
            body = json.dumps({"error": {"message": f"status {fault.status}"}}).encode()
            extra = f"retry-after: {fault.retry_after}\r\n" if fault.retry_after else ""
            conn.sendall(
                f"HTTP/1.1 {fault.status} Oops\r\ncontent-type: application/json\r\n{extra}"
                f"content-length: {len(body)}\r\n\r\n".encode()
                + body
            )
            return True
        if kind == "trickle_headers":
            # A header line that never ends (h11 allows ~16 KiB of it: 800 s at this pace).
            for byte in b"HTTP/1.1 200 OK\r\nx-slow: " + b"." * 16000:
                conn.sendall(bytes([byte]))
                if self._client_gone(conn, fault.interval):
                    return False
            return False
        if kind in ("stall", "stall_body"):
            if kind == "stall_body":
                conn.sendall(_SSE_HEAD)
            self._client_gone(conn, None)
            return False
        if kind in ("reset", "reset_mid"):
            if kind == "reset_mid":
                conn.sendall(_SSE_HEAD + _chunk(_delta("partial")))
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return False
        if kind == "garbage":
            conn.sendall(
                _SSE_HEAD + _chunk(b"\x00\xff garbage\ndata: {not json\xff\n\n") + b"0\r\n\r\n"
            )
            return True
        if kind == "huge_line":
            conn.sendall(_SSE_HEAD)
            piece = b"x" * 65536
            conn.sendall(_chunk(b'data: {"choices":[{"index":0,"delta":{"content":"'))
            for _ in range(max(1, fault.size // len(piece))):
                conn.sendall(_chunk(piece))
            conn.sendall(_chunk(b'"}}]}\n\n') + b"0\r\n\r\n")
            return True
        if kind == "endless":
            conn.sendall(_SSE_HEAD)
            sent = 0
            while not fault.size or sent < fault.size:  # ``size``: deltas before a cut
                conn.sendall(_chunk(_delta("more ")))
                sent += 1
                if self._client_gone(conn, fault.interval):
                    return False
            return False
        if kind == "no_finish":
            conn.sendall(_SSE_HEAD + _chunk(_delta(fault.text)) + b"0\r\n\r\n")
            return True
        raise ValueError(f"unknown fault {kind!r}")

    def _client_gone(self, conn: socket.socket, seconds: float | None) -> bool:
        """Wait up to ``seconds`` (``None``: for ever) for the client to close; True if it did."""
        conn.settimeout(seconds)
        try:
            data = conn.recv(65536)
        except TimeoutError:
            return False
        except OSError:
            data = b""
        finally:
            with contextlib.suppress(OSError):
                conn.settimeout(None)
        if data:
            return False  # a pipelined request: not expected from httpx
        self._count("closed_by_client")
        return True
