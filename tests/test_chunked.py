"""The chunked-body fast path: the decoder alone, then over real sockets with httpx."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from typing import Any

import httpx
import pytest
from fault_server import read_request
from hypothesis import given
from hypothesis import strategies as st

from rxreact.model.http._chunked import (
    ChunkedDecoder,
    ChunkedFramingError,
    achunked_body,
    chunked_body,
)


def encode(chunks: list[bytes], ext: bytes = b"", trailers: bytes = b"") -> bytes:
    body = b"".join(b"%x%s\r\n%s\r\n" % (len(c), ext, c) for c in chunks if c)
    return body + b"0\r\n" + trailers + b"\r\n"


def decode_in_pieces(data: bytes, cuts: list[int]) -> tuple[bytes, ChunkedDecoder]:
    decoder = ChunkedDecoder()
    out, last = [], 0
    for cut in [*sorted(set(cuts)), len(data)]:
        out.append(decoder.feed(data[last:cut]))
        last = cut
    return b"".join(out), decoder


# -- the decoder ---------------------------------------------------------------------------


@given(
    chunks=st.lists(st.binary(min_size=1, max_size=300), max_size=12),
    ext=st.sampled_from([b"", b";name=value", b" ;a=1;b", b'\t;q="x y"']),
    trailers=st.sampled_from([b"", b"X-Trailer: 1\r\n", b"A: 1\r\nB: 2\r\n"]),
    cuts=st.lists(st.integers(min_value=0, max_value=5000), max_size=20),
)
def test_any_split_of_the_body_decodes_to_the_payload(
    chunks: list[bytes], ext: bytes, trailers: bytes, cuts: list[int]
) -> None:
    data = encode(chunks, ext, trailers)
    payload, decoder = decode_in_pieces(data, [c % (len(data) + 1) for c in cuts])
    assert payload == b"".join(chunks)
    assert decoder.done and decoder.leftover == 0


def test_chunk_data_passes_through_as_it_arrives() -> None:
    decoder = ChunkedDecoder()
    assert decoder.feed(b"a\r\n01234") == b"01234"  # half a chunk is not held back
    assert decoder.feed(b"56789\r") == b"56789"
    assert decoder.feed(b"\n3\r\nabc\r\n") == b"abc"
    assert not decoder.done
    assert decoder.feed(b"0\r\n\r\n") == b""
    assert decoder.done


def test_upper_case_hex_sizes() -> None:
    payload, decoder = decode_in_pieces(b"1A\r\n" + b"x" * 26 + b"\r\n0\r\n\r\n", [])
    assert payload == b"x" * 26 and decoder.done


def test_bytes_after_the_end_are_counted_not_decoded() -> None:
    decoder = ChunkedDecoder()
    assert decoder.feed(b"1\r\na\r\n0\r\n\r\nHTTP/1.1") == b"a"
    assert decoder.done and decoder.leftover == 8
    assert decoder.feed(b"more") == b""
    assert decoder.leftover == 12


@pytest.mark.parametrize(
    "data",
    [
        b"zz\r\nabc\r\n",  # not hex
        b"3\r\nabcX\r\n",  # data not followed by CRLF
        b"-1\r\n",
        b"3 garbage\r\nabc\r\n",
        b"1" * 5000,  # a size line that never ends
        b"0\r\n" + b"X: " + b"y" * 5000,  # a trailer line that never ends
    ],
)
def test_malformed_framing_is_a_protocol_error(data: bytes) -> None:
    decoder = ChunkedDecoder()
    with pytest.raises(ChunkedFramingError) as info:
        decoder.feed(data)
    assert isinstance(info.value, httpx.RemoteProtocolError)  # handled as httpx's own would be


def test_a_split_size_line_waits_for_its_end() -> None:
    decoder = ChunkedDecoder()
    assert decoder.feed(b"1") == b""
    assert decoder.feed(b"0\r\n" + b"y" * 16) == b"y" * 16
    assert decoder.feed(b"\r\n0\r") == b""
    assert decoder.feed(b"\n\r\n") == b"" and decoder.done


# -- over real sockets ---------------------------------------------------------------------


class RawHTTPServer:
    """A keep-alive loopback server that answers every request with given raw bytes.

    ``reply`` is a list of byte strings sent with one ``sendall`` each (the response head
    included). Counts accepted connections, so a test can tell whether httpx reused one.
    """

    def __init__(self, reply: list[bytes], *, close_after_reply: bool = False) -> None:
        self.reply = reply
        self.close_after_reply = close_after_reply
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/stream"

    def __enter__(self) -> RawHTTPServer:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):  # shutdown wakes the blocked accept; close does not
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(5)
        for thread in self._threads:
            thread.join(5)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            thread = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            buffer = [b""]
            while True:
                if read_request(conn, buffer) is None:
                    return
                try:
                    for piece in self.reply:
                        conn.sendall(piece)
                except OSError:
                    return
                if self.close_after_reply:
                    return


def head(extra: bytes = b"") -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n" + extra + b"\r\n"
    )


EVENTS = [b'data: {"n": %d}\n\n' % i for i in range(50)]


def fetch(client: httpx.Client, url: str) -> bytes | None:
    """POST; the body as the fast path read it, or None if the fast path did not apply."""
    with client.stream("POST", url, content=b"{}") as response:
        pieces = chunked_body(response, 5.0)
        return None if pieces is None else b"".join(pieces)


@pytest.mark.parametrize(("ext", "trailers"), [(b"", b""), (b";x=1", b"X-Checksum: abc\r\n")])
def test_the_body_is_read_and_the_connection_reused(ext: bytes, trailers: bytes) -> None:
    body = encode(EVENTS, ext, trailers)
    # The head and the first chunks in one write (h11 buffers them), the rest in pieces.
    reply = [head() + body[:100], body[100:1000], body[1000:]]
    with RawHTTPServer(reply) as server, httpx.Client() as client:
        for _ in range(3):
            assert fetch(client, server.url) == b"".join(EVENTS)
        assert server.connections == 1


def test_a_silent_server_hits_the_read_limit() -> None:
    body = encode(EVENTS)
    with (
        RawHTTPServer([head() + body[:500]]) as server,
        httpx.Client() as client,
        client.stream("POST", server.url, content=b"{}") as response,
    ):
        pieces = chunked_body(response, 0.2)
        assert pieces is not None
        # The server keeps the connection open, silent: the read limit ends the wait.
        with pytest.raises(httpx.ReadTimeout):
            for _ in pieces:
                pass


def test_eof_before_the_last_chunk_ends_the_pieces_early() -> None:
    body = encode(EVENTS)
    with (
        RawHTTPServer([head() + body[:500]], close_after_reply=True) as server,
        httpx.Client() as client,
    ):
        with client.stream("POST", server.url, content=b"{}") as response:
            pieces = chunked_body(response, 5.0)
            assert pieces is not None
            received = b"".join(pieces)
        assert b"".join(EVENTS).startswith(received) and len(received) < len(body)
        server.reply, server.close_after_reply = [head() + body], False
        # A new connection: the broken one is gone.
        assert fetch(client, server.url) == b"".join(EVENTS)
        assert server.connections == 2


def test_malformed_framing_over_http_is_a_remote_protocol_error() -> None:
    with (
        RawHTTPServer([head() + b"5\r\nabcdeXX"]) as server,
        httpx.Client() as client,
        client.stream("POST", server.url, content=b"{}") as response,
    ):
        pieces = chunked_body(response, 5.0)
        assert pieces is not None
        with pytest.raises(httpx.RemoteProtocolError):
            list(pieces)


@pytest.mark.parametrize(
    "reply",
    [
        [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"],
        [head(b"Content-Encoding: gzip\r\n") + b"0\r\n\r\n"],
    ],
    ids=["content-length", "content-encoding"],
)
def test_other_bodies_are_left_to_httpx(reply: list[bytes]) -> None:
    with RawHTTPServer(reply) as server, httpx.Client() as client:
        assert fetch(client, server.url) is None


def test_a_transport_that_is_not_httpcore_is_left_to_httpx() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Transfer-Encoding": "chunked"}, content=b"x")

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        assert fetch(client, "http://test/stream") is None


def test_async_client_reads_and_reuses_the_connection() -> None:
    body = encode(EVENTS, b";e", b"T: 1\r\n")
    reply = [head() + body[:64], body[64:]]

    async def main(url: str) -> list[bytes]:
        out = []
        async with httpx.AsyncClient() as client:
            for _ in range(3):
                async with client.stream("POST", url, content=b"{}") as response:
                    pieces = achunked_body(response, 5.0)
                    assert pieces is not None
                    out.append(b"".join([piece async for piece in pieces]))
        return out

    with RawHTTPServer(reply) as server:
        assert asyncio.run(main(server.url)) == [b"".join(EVENTS)] * 3
        assert server.connections == 1


# -- through OpenAIChatModel and the agent, in both I/O modes -------------------------------


@pytest.fixture
def fast_path_uses(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record, for every streamed response, whether the chunked fast path took it."""
    from rxreact.model.http import _read_sse as _http_stream

    uses: list[bool] = []

    def spy(real: Any) -> Any:
        def wrapper(response: httpx.Response, read_timeout: float | None) -> Any:
            body = real(response, read_timeout)
            uses.append(body is not None)
            return body

        return wrapper

    monkeypatch.setattr(_http_stream, "chunked_body", spy(chunked_body))
    monkeypatch.setattr(_http_stream, "achunked_body", spy(achunked_body))
    return uses


@pytest.mark.usefixtures("io_mode")
def test_an_agent_run_reads_on_the_fast_path_over_one_connection(
    fast_path_uses: list[bool],
) -> None:
    from rxreact import ReactAgent, tool
    from rxreact.model.openai.client import OpenAIChatModel
    from rxreact.model.scripted.replies import text_reply, tool_call_reply
    from rxreact.testing import MockOpenAIServer

    @tool
    def get_weather(city: str) -> str:
        """The weather."""
        return f"sunny in {city}"

    script = [
        tool_call_reply(("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"})),
        text_reply("Sunny in both."),
        text_reply("Again."),
    ]
    with (
        MockOpenAIServer(script) as server,
        OpenAIChatModel("m", base_url=server.base_url) as model,
    ):
        agent = ReactAgent(model, [get_weather])
        assert agent.call("Oslo and Rome?") == "Sunny in both."
        # The agent disposes each round's stream as soon as it completes: that must not break
        # the connection the round handed back to the pool.
        assert agent.call("And now?") == "Again."
        assert server.connections == 1
    # If httpx or httpcore change shape, the fast path falls back silently: this says so.
    assert fast_path_uses == [True, True, True]


def test_httpcore_and_h11_are_declared_with_bounds_the_installed_versions_meet() -> None:
    # The fast path uses httpcore and h11 internals: both must be declared, bounded above,
    # and the versions this suite runs on must be inside the bounds (else widen them knowingly).
    import tomllib
    from importlib.metadata import version
    from pathlib import Path

    from packaging.requirements import Requirement

    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    declared = [
        Requirement(d) for d in tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    ]
    for name in ("httpcore", "h11"):
        (requirement,) = [r for r in declared if r.name == name]
        assert any(spec.operator == "<" for spec in requirement.specifier), name
        assert requirement.specifier.contains(version(name)), (name, version(name))
