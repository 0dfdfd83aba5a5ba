""":class:`BedrockModel`: Amazon Bedrock's Converse API (``POST /model/{modelId}/converse-stream``).

The Converse wire format on the shared transport (:mod:`rxreact.model.http.model`): the request
body (:mod:`~rxreact.model.bedrock.request_codec`), the stream's events
(:class:`~rxreact.model.bedrock.wire.ConverseStreamParser`, reading AWS's binary event stream
through :class:`~rxreact.model.http.eventstream.EventStreamDecoder` instead of SSE) and a whole
answer (``/converse``, :func:`~rxreact.model.bedrock.wire.parse_response`). Each request is
signed with SigV4 (:mod:`~rxreact.model.bedrock.signing`) or carries a Bedrock API key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
from reactivex import abc

from rxreact.errors import ConfigurationError, InvalidArgumentError
from rxreact.messages import ChatRequest
from rxreact.model.bedrock.request_codec import encode_request
from rxreact.model.bedrock.signing import SigV4Signer, region_of
from rxreact.model.bedrock.wire import ConverseStreamParser, parse_response
from rxreact.model.chunks import ModelResponse
from rxreact.model.http._endpoint import is_loopback
from rxreact.model.http._io_mode import IOMode
from rxreact.model.http.codec import StreamParser
from rxreact.model.http.limits import DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_TOOL_ARGUMENTS
from rxreact.model.http.model import HTTPChatModel
from rxreact.model.retry_policy import Backoff

__all__ = ["BedrockModel"]

EVENT_STREAM = "application/vnd.amazon.eventstream"


class BedrockModel(HTTPChatModel):
    """A :class:`~rxreact.model.base.ChatModel` over Amazon Bedrock's Converse API.

    Args:
        model: the model id or inference profile (``anthropic.claude-sonnet-4-5-v1:0``,
            ``us.amazon.nova-pro-v1:0``, an ARN); its colons are its own. Default
            ``$RXREACT_MODEL``.
        region: the AWS region; wins over ``$AWS_REGION`` / ``$AWS_DEFAULT_REGION`` and the
            profile's. Needed to sign and for the default endpoint.
        base_url: the endpoint root; default ``$BEDROCK_BASE_URL`` (a proxy, a VPC endpoint,
            the loopback mock), else ``https://bedrock-runtime.{region}.amazonaws.com``.
        api_key: a Bedrock API key, sent as a bearer token; default
            ``$AWS_BEARER_TOKEN_BEDROCK``. Sent over plain HTTP only to a loopback host.
            Without one, each request is signed with SigV4 from the standard AWS credential
            chain (botocore: the ``rxreact[bedrock]`` extra), or from ``credentials``.
        credentials: botocore credentials to sign with instead of the chain's.
        max_tokens: ``inferenceConfig.maxTokens`` of every request (default: the model's).
        options: body parameters of every request (module docstring of
            :mod:`~rxreact.model.bedrock.request_codec`); a request's own win key by key.
        headers, connect_timeout, first_chunk_timeout, chunk_timeout, max_retries, backoff,
        http_client, io, io_scheduler, max_line_bytes, max_tool_arguments: the transport's, as
            for :class:`~rxreact.model.openai.client.OpenAIChatModel` (``max_line_bytes``
            caps an event-stream frame). Retried before the first chunk: 429, 5xx, a
            ``throttlingException`` / ``serviceUnavailableException`` /
            ``internalServerException`` event, a cut stream.

    Errors: HTTP statuses map onto :class:`~rxreact.errors.ModelHTTPError` subclasses with
    AWS's message (a wrong signature's 403 is an :class:`~rxreact.errors.AuthenticationError`,
    not retried); an exception event after the first chunk is a
    :class:`~rxreact.errors.ProviderStreamError` whose ``error_type`` names it; a corrupt
    frame (a CRC that does not match) a :class:`~rxreact.errors.StreamProtocolError`.
    """

    path = "/model"
    provider = "aws.bedrock"
    api_key_env = "AWS_BEARER_TOKEN_BEDROCK"
    base_url_env = "BEDROCK_BASE_URL"

    def __init__(
        self,
        model: str | None = None,
        *,
        region: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        credentials: Any = None,
        max_tokens: int | None = None,
        options: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        connect_timeout: float | None = 10.0,
        first_chunk_timeout: float | None = 60.0,
        chunk_timeout: float | None = 60.0,
        max_retries: int = 2,
        backoff: Backoff | None = None,
        http_client: httpx.Client | httpx.AsyncClient | None = None,
        io: IOMode | None = None,
        io_scheduler: abc.SchedulerBase | None = None,
        max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
        max_tool_arguments: int | None = DEFAULT_MAX_TOOL_ARGUMENTS,
    ) -> None:
        if region is not None and (not isinstance(region, str) or not region.strip()):
            raise InvalidArgumentError(f"region must be a non-empty str, got {region!r}")
        self.region: str | None = region_of(region, dict(os.environ))
        """The region requests are signed for (``None``: only a bearer key or a loopback
        endpoint can be used)."""
        base_url = (base_url or os.environ.get(self.base_url_env) or "").rstrip("/") or None
        if base_url is None:
            if self.region is None:
                raise ConfigurationError(
                    "BedrockModel needs a region: pass region=... or set AWS_REGION "
                    "(or BEDROCK_BASE_URL for a proxy)"
                )
            base_url = f"https://bedrock-runtime.{self.region}.amazonaws.com"
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            connect_timeout=connect_timeout,
            first_chunk_timeout=first_chunk_timeout,
            chunk_timeout=chunk_timeout,
            max_retries=max_retries,
            backoff=backoff,
            headers=headers,
            http_client=http_client,
            io=io,
            io_scheduler=io_scheduler,
            options=options,
            max_line_bytes=max_line_bytes,
            max_tool_arguments=max_tool_arguments,
        )
        parts = urlsplit(self.base_url)
        loopback = is_loopback(parts.hostname or "")
        self._bearer = self._endpoint.key is not None
        if self._bearer and parts.scheme != "https" and not loopback:
            raise ConfigurationError(
                f"a Bedrock API key goes over https only (or to a loopback host): {self.base_url}"
            )
        models = f"{self.base_url}{self.path}/{quote(self.model, safe='')}"
        self._endpoint.retarget(f"{models}/converse-stream", f"{models}/converse")
        self._endpoint.sign_with(self._sign)
        self._signer: SigV4Signer | None = None
        self._credentials = credentials
        self._unsigned_ok = loopback
        self.max_tokens = max_tokens
        if not self._bearer and not loopback:
            self._signer = self._new_signer()  # a missing extra or credentials: say so now

    def _new_signer(self) -> SigV4Signer:
        if self.region is None:
            raise ConfigurationError(
                "BedrockModel signs with SigV4 for a region: pass region=... or set AWS_REGION"
            )
        return SigV4Signer(self.region, self._credentials, local=self._unsigned_ok)

    def _sign(self, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        if url.endswith("/converse-stream"):
            headers["Accept"] = EVENT_STREAM
        if self._bearer:
            return headers
        if self._signer is None:
            try:
                self._signer = self._new_signer()
            except ConfigurationError:
                if self._unsigned_ok:
                    self._bearer = True  # a loopback endpoint, no credentials: never look again
                    return headers
                raise
        return self._signer.sign(url, headers, body)

    def _body(self, request: ChatRequest, stream: bool) -> dict[str, Any]:
        return encode_request(request, max_tokens=self.max_tokens, default_options=self.options)

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def _stream_parser(self) -> StreamParser:
        return ConverseStreamParser()

    def _parse_response(self, body: bytes) -> ModelResponse:
        return parse_response(body)
