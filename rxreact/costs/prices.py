"""What a model request cost, in USD: :func:`cost_of`, from the ``genai-prices`` package
(``rxreact[prices]``) or from prices you register (:func:`register_price`).

The tokens are counted as each provider bills them. A :class:`~rxreact.Usage` counts every
input token in ``prompt_tokens`` (the cached ones too) and every output token in
``completion_tokens`` (reasoning included, which OpenAI and Anthropic bill as output); the
cached part is read from the provider's own extras (OpenAI's
``prompt_tokens_details.cached_tokens``, Anthropic's ``cache_read_input_tokens`` and
``cache_creation_input_tokens``), so cache reads are billed at the cache-read price and cache
writes at the cache-write price. A cost the provider reported itself (OpenRouter's ``cost``)
is kept as it is. A model neither the package nor your table knows has ``cost`` ``None``,
never 0: an unknown price is not a free one.
"""

from __future__ import annotations

import ipaddress
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from rxreact.errors import ConfigurationError
from rxreact.messages import Usage

__all__ = ["ModelPrice", "cost_of", "refresh_prices", "register_price", "with_cost"]


@dataclass(frozen=True)
class ModelPrice:
    """A model's prices in USD per million tokens (``cache_read`` / ``cache_write``: ``None``
    bills them as ``input``)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(self, tokens: _Tokens) -> float:
        """The USD cost of ``tokens``."""
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        uncached = max(0, tokens.input - tokens.cache_read - tokens.cache_write)
        total = (
            uncached * self.input
            + tokens.cache_read * read
            + tokens.cache_write * write
            + tokens.output * self.output
        )
        return total / 1_000_000


_OWN: dict[str, ModelPrice] = {}
_OWN_LOCK = threading.Lock()


def register_price(model: str, price: ModelPrice) -> None:
    """Price ``model`` (its name, ``"gpt-5"``, or ``"provider:name"``) for every run of the
    process; it wins over the ``genai-prices`` table (your negotiated prices, a local model)."""
    with _OWN_LOCK:
        _OWN[model] = price


@dataclass(frozen=True)
class _Tokens:
    input: int
    output: int
    cache_read: int
    cache_write: int


def _tokens(usage: Usage) -> _Tokens:
    extra = usage.__pydantic_extra__ or {}
    details = extra.get("prompt_tokens_details")
    read = extra.get("cache_read_input_tokens")
    if read is None and isinstance(details, dict):
        read = details.get("cached_tokens")
    write = extra.get("cache_creation_input_tokens")
    return _Tokens(
        usage.prompt_tokens or 0,
        usage.completion_tokens or 0,
        read if isinstance(read, int) else 0,
        write if isinstance(write, int) else 0,
    )


def cost_of(usage: Usage, model: Any) -> float | None:
    """The USD cost of ``usage`` reported by ``model`` (a model object: its ``model``,
    ``provider`` and ``base_url`` name it), or ``None`` when no price is known."""
    if usage.cost is not None:
        return usage.cost
    name = getattr(model, "model", None)
    if not isinstance(name, str) or not name:
        return None
    provider = getattr(model, "provider", None)
    with _OWN_LOCK:
        own = _OWN.get(f"{provider}:{name}") or _OWN.get(name)
    tokens = _tokens(usage)
    if own is not None:
        return own.cost(tokens)
    return _genai_cost(tokens, name, provider, getattr(model, "base_url", None))


def with_cost(usage: Usage, model: Any) -> Usage:
    """``usage`` with its ``cost`` filled in, when it is known."""
    if usage.cost is not None:
        return usage
    cost = cost_of(usage, model)
    return usage if cost is None else usage.model_copy(update={"cost": cost})


_GENAI: list[Any] = []  # the genai_prices module, or None without it (imported once)


def _genai() -> Any:
    if not _GENAI:
        try:
            import genai_prices
        except ImportError:
            _GENAI.append(None)
        else:
            _GENAI.append(genai_prices)
    return _GENAI[0]


def _genai_cost(tokens: _Tokens, name: str, provider: Any, base_url: Any) -> float | None:
    genai = _genai()
    if genai is None:
        return None
    # The endpoint names the provider (Groq's, Mistral's...) unless it is a local one (a
    # loopback mock, a proxy): then the adapter's own provider does.
    where: dict[str, str] = {}
    if isinstance(base_url, str) and base_url and not _local(base_url):
        where["provider_api_url"] = base_url
    elif isinstance(provider, str) and provider:
        where["provider_id"] = provider
    key = (name, *where.items())
    with _OWN_LOCK:
        known = _FOUND.get(key, _UNSEEN)
    if known is _UNSEEN:  # looked up once: one genai-prices calculation takes a millisecond
        known = _unit_prices(genai, name, where)
        with _OWN_LOCK:
            _FOUND[key] = known
    if known is None:
        return None
    if isinstance(known, ModelPrice):
        return known.cost(tokens)
    usage = genai.Usage(
        input_tokens=tokens.input,
        output_tokens=tokens.output,
        cache_read_tokens=tokens.cache_read or None,
        cache_write_tokens=tokens.cache_write or None,
    )
    return float(known.calc_price(usage)["total_price"])


def _unit_prices(genai: Any, name: str, where: dict[str, str]) -> Any:
    """The model's prices per million tokens as a :class:`ModelPrice` when they are flat, its
    genai-prices ``ModelPrice`` when they are tiered (priced per request then), ``None`` when
    it is not in the table."""
    probe, million = 1000, 1_000_000
    try:
        found = genai.calc_price(genai.Usage(input_tokens=probe), model_ref=name, **where)
    except LookupError:
        return None
    table = found.model_price

    def per_million(**tokens: int) -> float:
        return float(table.calc_price(genai.Usage(**tokens))["total_price"]) * (million / probe)

    input_price = per_million(input_tokens=probe)
    large = float(table.calc_price(genai.Usage(input_tokens=million))["total_price"])
    if abs(large - input_price) > 1e-9 * max(1.0, input_price):
        return table  # tiered by the request's size: priced per request
    return ModelPrice(
        input=input_price,
        output=per_million(output_tokens=probe),
        cache_read=per_million(input_tokens=probe, cache_read_tokens=probe),
        cache_write=per_million(input_tokens=probe, cache_write_tokens=probe),
    )


_UNSEEN = object()
_FOUND: dict[tuple[Any, ...], Any] = {}  # (model, where) -> its prices, or None


def _local(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback or ipaddress.ip_address(host).is_private
    except ValueError:
        return False


def refresh_prices() -> None:
    """Fetch ``genai-prices``' newest price table now (it is otherwise the one the installed
    package ships); needs ``rxreact[prices]`` and the network.

    Raises:
        ConfigurationError: ``genai-prices`` is not installed.
    """
    genai = _genai()
    if genai is None:
        raise ConfigurationError("refresh_prices needs genai-prices: pip install 'rxreact[prices]'")
    updater = genai.UpdatePrices()
    updater.start(wait=True)
    updater.stop()
