"""Loop mode's network backend (asyncio protocols under httpcore), against loopback servers:
plain and TLS, timeouts and errors as httpx's, backpressure, stale pooled connections.

(The whole loop-mode suite reads through it too; these pin what that suite does not reach.)
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpcore
import httpx
import pytest

from rxreact.model.http._asyncio_network import HIGH_WATER, AsyncioBackend, AsyncioTransport

TLS = Path(__file__).parent / "fixtures" / "tls"  # a self-signed cert for 127.0.0.1
LIMITS = httpx.Limits(max_connections=4, max_keepalive_connections=4)
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def serving(handler: Handler, tls: bool = False) -> AsyncIterator[tuple[str, list[int]]]:
    """A loopback server running ``handler`` per connection; yields its URL and a list that
    counts the connections it accepted."""
    accepted: list[int] = []
    context = None
    if tls:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(TLS / "cert.pem", TLS / "key.pem")

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        try:
            await handler(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}/", accepted


async def respond(writer: asyncio.StreamWriter, body: bytes, keep_alive: bool = True) -> None:
    connection = "keep-alive" if keep_alive else "close"
    head = f"HTTP/1.1 200 OK\r\ncontent-length: {len(body)}\r\nconnection: {connection}\r\n\r\n"
    writer.write(head.encode() + body)
    await writer.drain()


async def read_request(reader: asyncio.StreamReader) -> None:
    await reader.readuntil(b"\r\n\r\n")


def client(ssl_context: ssl.SSLContext | None = None) -> httpx.AsyncClient:
    context = ssl_context or ssl.create_default_context()
    transport = AsyncioTransport(limits=LIMITS, ssl_context=context)
    return httpx.AsyncClient(transport=transport, timeout=5)


def test_plain_requests_reuse_one_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(3):
            await read_request(reader)
            await respond(writer, b"hello")

    async def main() -> None:
        async with serving(handler) as (url, accepted), client() as http:
            bodies = [(await http.get(url)).content for _ in range(3)]
        assert bodies == [b"hello"] * 3
        assert len(accepted) == 1

    asyncio.run(main())


def test_tls_handshake_and_body_through_start_tls() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await respond(writer, b"secret")
        await reader.read()  # until the client closes

    async def main() -> None:
        trusted = ssl.create_default_context(cafile=TLS / "cert.pem")
        async with serving(handler, tls=True) as (url, _), client(trusted) as http:
            response = await http.get(url)
            stream = response.extensions["network_stream"]
            assert stream.get_extra_info("ssl_object") is not None
        assert response.content == b"secret"

    asyncio.run(main())


def test_an_untrusted_certificate_is_a_connect_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    async def main() -> None:
        async with serving(handler, tls=True) as (url, _), client() as http:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await http.get(url)

    asyncio.run(main())


def test_a_refused_connection_is_a_connect_error() -> None:
    async def main() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        async with client() as http:
            with pytest.raises(httpx.ConnectError):
                await http.get(f"http://127.0.0.1:{port}/")

    asyncio.run(main())


def test_silence_past_the_read_timeout_is_a_read_timeout() -> None:
    release = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc")
        await writer.drain()
        await release.wait()  # then nothing more: the client's read timeout must end it

    async def main() -> None:
        async with serving(handler) as (url, _), client() as http:
            try:
                timeout = httpx.Timeout(5, read=0.2)
                async with http.stream("GET", url, timeout=timeout) as response:
                    with pytest.raises(httpx.ReadTimeout):
                        await response.aread()
            finally:
                release.set()

    asyncio.run(main())


def test_a_body_cut_short_by_the_server_is_an_error_not_a_short_body() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly ten b")
        await writer.drain()  # and the handler's end closes the connection

    async def main() -> None:
        async with serving(handler) as (url, _), client() as http:
            with pytest.raises(httpx.RemoteProtocolError):
                await http.get(url)

    asyncio.run(main())


def test_an_unread_body_stops_the_socket_reads_at_the_high_water_mark() -> None:
    body = bytes(range(256)) * 16 * 1024  # 4 MiB
    server_blocked = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body))
        for start in range(0, len(body), 64 * 1024):
            writer.write(body[start : start + 64 * 1024])
            transport: Any = writer.transport
            if transport.get_write_buffer_size() > 0 and not server_blocked.is_set():
                server_blocked.set()  # the kernel's buffers are full: the client stopped reading
            await writer.drain()

    async def main() -> None:
        async with (
            serving(handler) as (url, _),
            client() as http,
            http.stream("GET", url) as response,
        ):
            chunks = response.aiter_raw()
            received = [await chunks.__anext__()]
            await asyncio.wait_for(server_blocked.wait(), 10)
            connection: Any = response.extensions["network_stream"]._connection
            assert connection.reading_paused
            assert connection.unread_bytes <= HIGH_WATER + 256 * 1024  # one recv past it
            received += [chunk async for chunk in chunks]
        assert b"".join(received) == body

    asyncio.run(main())


def test_a_pooled_connection_the_server_closed_is_not_reused() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await respond(writer, b"once")  # says keep-alive, then closes anyway

    async def main() -> None:
        async with serving(handler) as (url, accepted), client() as http:
            first = await http.get(url)
            stream = first.extensions["network_stream"]
            connection: Any = stream._connection
            if not connection.ended:  # wait for the server's close to arrive (an event)
                lost = asyncio.Event()
                seen = connection.connection_lost

                def on_lost(error: Exception | None) -> None:
                    seen(error)
                    lost.set()

                connection.connection_lost = on_lost
                await asyncio.wait_for(lost.wait(), 10)
            assert stream.get_extra_info("is_readable")
            second = await http.get(url)
        assert (first.content, second.content) == (b"once", b"once")
        assert len(accepted) == 2

    asyncio.run(main())


def test_unix_socket_connections_read_and_write(tmp_path: Path) -> None:
    path = str(tmp_path / "s")

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readexactly(4))
        await writer.drain()
        writer.close()

    async def main() -> None:
        server = await asyncio.start_unix_server(echo, path)
        async with server:
            stream = await AsyncioBackend().connect_unix_socket(path, timeout=5)
            await stream.write(b"ping", timeout=5)
            assert await stream.read(100, timeout=5) == b"ping"
            assert await stream.read(100, timeout=5) == b""  # EOF
            with pytest.raises(httpcore.WriteError):
                await stream.write(b"more")
            await stream.aclose()

    asyncio.run(main())
