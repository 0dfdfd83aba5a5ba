"""Slow senders: a request's headers and body get a total deadline (not one per read), and
``rxreact serve`` limits its concurrent connections. Raw sockets send a byte at a time and
wait on the server closing the connection (``select`` paces the bytes and sees the close)."""

from __future__ import annotations

import os
import select
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("uvicorn")

DEADLINE = 1.0
PACE = 0.1  # seconds between a slow sender's bytes: well inside any per-read timeout


async def echo(scope: Any, receive: Any, send: Any) -> None:
    """An ASGI app that reads the whole body and answers with its length."""
    if scope["type"] != "http":
        return
    size, more = 0, True
    while more:
        message = await receive()
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    body = str(size).encode()
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextmanager
def served(deadline: float) -> Iterator[tuple[str, int]]:
    import uvicorn

    from rxreact.serve.deadline import with_request_deadline

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(echo, log_level="warning", lifespan="off", timeout_keep_alive=30)
    server = uvicorn.Server(with_request_deadline(config, deadline))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[:2]
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def trickle(address: tuple[str, int], data: bytes, *, limit: float = 10.0) -> tuple[bytes, float]:
    """Send ``data`` a byte at a time until the server closes the connection: what it sent
    back, and the seconds it took. (A close while bytes still arrive may reach us as a reset
    that drops the 408 before it is read: then nothing was received.)"""
    started = time.monotonic()
    received = b""
    with socket.create_connection(address, timeout=limit) as conn:
        for byte in data:
            readable, _, _ = select.select([conn], [], [], PACE)
            try:
                if readable:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    received += chunk
                conn.sendall(bytes([byte]))
            except OSError:  # reset: the server closed with our bytes still arriving
                break
        else:
            pytest.fail("the server read the whole slow request")
        while time.monotonic() - started < limit:  # the rest of an answer, to the close
            try:
                chunk = conn.recv(4096)
            except OSError:
                break
            if not chunk:
                break
            received += chunk
    return received, time.monotonic() - started


HEAD = b"POST /echo HTTP/1.1\r\nhost: localhost\r\ncontent-length: 400\r\n\r\n"


def test_slow_headers_are_cut_off_at_the_deadline() -> None:
    with served(DEADLINE) as address:
        slow = HEAD + b"x" * 400  # headers alone take 6 s at this pace
        answer, took = trickle(address, slow)
    assert answer.startswith(b"HTTP/1.1 408 ") or answer == b"", answer
    assert DEADLINE <= took < DEADLINE + 4


def test_a_slow_body_is_cut_off_at_the_deadline_though_each_byte_is_quick() -> None:
    with served(DEADLINE) as address, socket.create_connection(address, timeout=10) as conn:
        conn.sendall(HEAD)  # the headers at once
        started = time.monotonic()
        for _ in range(400):
            readable, _, _ = select.select([conn], [], [], PACE)
            if readable:
                break
            conn.sendall(b"x")
        try:
            answer = conn.recv(4096)
        except OSError:  # reset: a byte of ours arrived after the close
            answer = b""
        took = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 ") or answer == b"", answer
    assert DEADLINE * 0.9 <= took < DEADLINE + 4


def test_requests_in_time_are_answered_each_with_its_own_deadline() -> None:
    with served(DEADLINE) as address, socket.create_connection(address, timeout=10) as conn:
        for _ in range(3):  # kept alive: each request is timed from its own first byte
            conn.sendall(HEAD + b"y" * 400)
            answer = b""
            while not answer.endswith(b"\r\n\r\n400"):
                chunk = conn.recv(4096)
                assert chunk, f"closed after {answer!r}"
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200 ")
            # Idle longer than the deadline between requests: only keep-alive counts there.
            readable, _, _ = select.select([conn], [], [], DEADLINE * 1.5)
            assert not readable, "the server closed an idle kept-alive connection early"


@pytest.mark.integration
def test_rxreact_serve_sets_the_deadline_and_the_concurrency_limit() -> None:
    from serve_helpers import serve_process

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    options = ("--demo", "--request-deadline", "1", "--limit-concurrency", "3")
    with serve_process(env, *options) as (url, _):
        host, port = url.removeprefix("http://").split(":")
        address = (host, int(port))
        answer, took = trickle(address, b"GET / HTTP/1.1\r\nhost: localhost\r\n" + b"x" * 100)
        assert answer.startswith(b"HTTP/1.1 408 ") or answer == b"", answer
        assert 1 <= took < 10
        holders = [socket.create_connection(address, timeout=10) for _ in range(3)]
        try:
            for holder in holders:
                holder.sendall(b"GET / HTTP/1.1\r\n")  # started, not finished: held open
            with socket.create_connection(address, timeout=10) as late:
                late.sendall(b"GET / HTTP/1.1\r\nhost: localhost\r\n\r\n")
                refused = late.recv(4096)
                assert refused.startswith(b"HTTP/1.1 503 "), refused
        finally:
            for holder in holders:
                holder.close()
