"""The settings of an :class:`~rxreact.model.http.model.HTTPChatModel` (``OpenAIChatModel`` and
the other providers' models), checked at construction.

A wrong type found at the first request (``base_url=123`` as an ``AttributeError`` deep in
httpx, ``connect_timeout="5"`` as a timeout that never fires) is found late and explained badly;
here each is an :class:`~rxreact.errors.InvalidArgumentError` naming the parameter. Values that
may come from the environment (a missing model name, a ``base_url`` that is not http(s)) stay
:class:`~rxreact.errors.ConfigurationError`, as before.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import httpx
from reactivex import abc

from rxreact._validate import (
    check_int,
    check_optional_int,
    check_optional_seconds,
    check_optional_str,
    check_options,
    described,
)
from rxreact.errors import ConfigurationError, InvalidArgumentError
from rxreact.model.retry_policy import Backoff

__all__ = ["check_model_arguments", "resolve_model_and_url"]


def check_model_arguments(
    *,
    model: Any,
    base_url: Any,
    api_key: Any,
    api_key_env: Any,
    timeouts: Mapping[str, Any],
    max_retries: Any,
    backoff: Any,
    headers: Any,
    http_client: Any,
    io_scheduler: Any,
    options: Any,
    caps: Mapping[str, Any],
) -> None:
    """Raise :class:`InvalidArgumentError` for the first setting of the wrong type or value."""
    for name, value in (
        ("model", model),
        ("base_url", base_url),
        ("api_key", api_key),
        ("api_key_env", api_key_env),
    ):
        check_optional_str(name, value)
    for name, value in timeouts.items():
        check_optional_seconds(name, value)
    check_int("max_retries", max_retries, 0)
    if backoff is not None and not isinstance(backoff, Backoff):
        raise InvalidArgumentError(f"backoff must be a Backoff or None, got {described(backoff)}")
    for key, value in check_options("headers", headers).items():
        if not isinstance(value, str):
            raise InvalidArgumentError(
                f"headers values must be str, got {described(value)} for {key!r}"
            )
    if http_client is not None and not isinstance(http_client, httpx.Client | httpx.AsyncClient):
        raise InvalidArgumentError(
            f"http_client must be an httpx.Client or httpx.AsyncClient, got "
            f"{described(http_client)}"
        )
    if io_scheduler is not None and not isinstance(io_scheduler, abc.SchedulerBase):
        raise InvalidArgumentError(
            f"io_scheduler must be a scheduler or None, got {described(io_scheduler)}"
        )
    check_options("options", options)
    for name, value in caps.items():
        check_optional_int(name, value, 1)


def resolve_model_and_url(kind: str, model: str | None, base_url: str) -> tuple[str, str]:
    """The model name (``model``, else ``$RXREACT_MODEL``) and the base URL (without a trailing
    ``/``) a ``kind`` (the model's class name, for the message) is made with.

    Raises:
        ConfigurationError: no model name, or a base URL that is not an http(s) URL.
    """
    model = model or os.environ.get("RXREACT_MODEL")
    if not model:
        raise ConfigurationError(f"no model name: pass {kind}(model=...) or set RXREACT_MODEL")
    base_url = base_url.rstrip("/")
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL:
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise ConfigurationError(f"base_url must be an http(s) URL, got {base_url!r}")
    return model, base_url
