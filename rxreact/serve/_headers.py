"""The headers that tell a browser what a response may do: content type sniffing off
everywhere, and the content security policies of the page and of a marble diagram."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["PAGE_CSP", "SVG_CSP", "NoSniff"]

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
    "connect-src 'self' blob:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
"""The chat page's policy: its own scripts, styles and API only, never framed."""
SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
"""A marble diagram's policy: its inline styles and nothing else (opened alone, no script runs)."""
_NOSNIFF = (b"x-content-type-options", b"nosniff")


class NoSniff:
    """ASGI middleware: ``X-Content-Type-Options: nosniff`` on every HTTP response (the
    outermost of the app's own, so CORS preflights and the guard's refusals have it too)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                if not any(name.lower() == _NOSNIFF[0] for name, _ in headers):
                    headers.append(_NOSNIFF)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, sending if scope["type"] == "http" else send)
