"""``FallbackModel``: a chain of models that answers while any of them does.

::

    model = FallbackModel([model_from("openai:gpt-5"), model_from("anthropic:claude-sonnet-4-5")])
    model = model_from("openai:gpt-5|anthropic:claude-sonnet-4-5")          the same

Before the first chunk, a model that fails (a retryable error after its own retries, a
timeout, a connection error; or anything ``fallback_on`` accepts) hands the request to the next
one; a bad request or a refused key (400, 401) does not, unless ``fallback_on`` says so. After
the first chunk, a failure (a cut stream, an error event, a stall past the model's
``chunk_timeout``) restarts the answer on the next model with the same request: the stream
carries a :class:`~rxreact.model.switch.SwitchChunk` and an agent turns it into
``model_switched`` and, when text was shown, ``round_restarted``. See
:mod:`rxreact.model.fallback._chain` for the marbles, :mod:`~rxreact.model.fallback.breaker` for
the breakers and ``docs/reliability.md`` for the whole story.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Literal

from reactivex import Observable, abc

from rxreact._closeable import Closeable
from rxreact.errors import CircuitOpenError, InvalidArgumentError, StreamProtocolError
from rxreact.messages import ChatRequest
from rxreact.model.base import ChatModel
from rxreact.model.chunks import ChatChunk, ModelResponse
from rxreact.model.fallback._chain import Chain
from rxreact.model.fallback._policy import is_model_failure, model_label
from rxreact.model.fallback.breaker import DEFAULT_BREAKER, CircuitBreaker, ModelBreaker
from rxreact.rx._fused import Fused

__all__ = ["FallbackModel"]

_LATENCIES = 200  # first-chunk latencies kept for a percentile hedge
_MIN_LATENCIES = 10  # a percentile hedge waits for this many before it hedges at all


class FallbackModel(Closeable):
    """A :class:`~rxreact.ChatModel` made of several, tried in order (see the module).

    Args:
        models: the chain, first choice first (any adapters, mixed).
        fallback_on: ``fn(error) -> bool``: more errors to move on after (a 400 of a model
            that does not take some option, say). It adds to the default, never narrows it.
        hold: ``None``: chunks go out as they come (a mid-answer failure withdraws them with
            ``round_restarted``); ``"sentence"``: text goes out a sentence at a time;
            an ``int`` N: N characters behind. A failure inside the held part is never seen.
        hedge_after: when the first model has sent nothing after this, start the second too;
            the first to send a chunk wins, the other is disposed (its socket closed).
            Seconds (``0.8``), or ``"p90"``: the 90th percentile of the first model's observed
            first-chunk latency (no hedging until it has seen 10 of them).
        breaker: the circuit-breaker policy (shared by every run of the process, per model);
            ``None``: no breakers.
    """

    def __init__(
        self,
        models: Sequence[ChatModel],
        *,
        fallback_on: Callable[[Exception], bool] | None = None,
        hold: Literal["sentence"] | int | None = None,
        hedge_after: float | str | None = None,
        breaker: CircuitBreaker | None = DEFAULT_BREAKER,
    ) -> None:
        models = tuple(models)
        if not models:
            raise InvalidArgumentError("FallbackModel needs at least one model")
        for model in models:
            if not (callable(getattr(model, "stream", None)) and hasattr(model, "complete")):
                raise InvalidArgumentError(f"not a ChatModel: {model!r}")
        if fallback_on is not None and not callable(fallback_on):
            raise InvalidArgumentError("fallback_on must be a function of the error")
        if not (
            hold is None
            or hold == "sentence"
            or (isinstance(hold, int) and not isinstance(hold, bool) and hold >= 0)
        ):
            raise InvalidArgumentError(f"hold must be None, 'sentence' or characters, got {hold!r}")
        self.models: tuple[ChatModel, ...] = models
        self.labels: tuple[str, ...] = _unique([model_label(m) for m in models])
        """Each model's name in events and usage (``provider:model``)."""
        self.fallback_on = fallback_on
        self.hold = hold
        self.hedge_after = hedge_after
        self._percentile = _percentile(hedge_after)
        self.breakers: tuple[ModelBreaker, ...] = (
            ()
            if breaker is None
            else tuple(
                breaker.for_model(_breaker_key(label, m))
                for label, m in zip(self.labels, models, strict=True)
            )
        )
        """Each model's circuit breaker (``breakers[i].state``); empty with ``breaker=None``."""
        self._latencies: deque[float] = deque(maxlen=_LATENCIES)
        self._latency_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FallbackModel({list(self.models)!r})"

    @property
    def label(self) -> str:
        """The chain's name: its models' names joined by ``|``."""
        return "|".join(self.labels)

    @property
    def model(self) -> str:
        """The chain's name, as a model's ``model`` (tracing, the command line)."""
        return self.label

    # -- what the command line asks of a model ------------------------------------------------

    def _first_needing_key(self) -> Any:
        return next((m for m in self.models if getattr(m, "needs_api_key", False)), None)

    @property
    def needs_api_key(self) -> bool:
        """Some model of the chain has no key and is not on loopback."""
        return self._first_needing_key() is not None

    @property
    def api_key_variable(self) -> str:
        """The key variable of the first model that needs one."""
        model = self._first_needing_key() or self.models[0]
        return str(getattr(model, "api_key_variable", ""))

    @property
    def base_url(self) -> str:
        """The base URL of the first model that needs a key (else the first model's)."""
        model = self._first_needing_key() or self.models[0]
        return str(getattr(model, "base_url", ""))

    # -- the model --------------------------------------------------------------------------

    def stream(self, request: ChatRequest) -> Observable[ChatChunk]:
        """The first model's stream that works, as described in the module (cold)."""

        def subscribe(
            observer: abc.ObserverBase[ChatChunk], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            chain = Chain(self, request, observer, scheduler)
            chain.start()
            return chain

        return Fused(subscribe)

    def complete(self, request: ChatRequest) -> ModelResponse:
        """The first model's whole response that works (blocking), the same rules.

        Raises:
            CircuitOpenError: every model's breaker is open.
            ModelError: the last model's failure, or one no model may fall back on.
        """
        error: Exception | None = None
        for index, model in enumerate(self.models):
            if self.breakers and not self.breakers[index].acquire()[0]:
                continue
            try:
                response = model.complete(request)
            except Exception as failure:
                self.record(index, failure)
                if not self.falls_back(failure):
                    raise
                error = failure
                continue
            self.record(index, None)
            return response
        if error is None:
            raise CircuitOpenError(self.breaker_states())
        raise error

    def close(self) -> None:
        """Close every model of the chain that holds connections."""
        for model in self.models:
            close = getattr(model, "close", None)
            if callable(close):
                close()

    # -- what a chain asks ------------------------------------------------------------------

    def falls_back(self, error: Exception) -> bool:
        """Whether ``error`` moves a request on to the next model."""
        if is_model_failure(error) or isinstance(error, StreamProtocolError):
            return True
        return self.fallback_on is not None and bool(self.fallback_on(error))

    def breaker_states(self) -> dict[str, str]:
        """Each model's name and its breaker's state (``closed`` for all without breakers)."""
        if not self.breakers:
            return dict.fromkeys(self.labels, "closed")
        return {label: b.state for label, b in zip(self.labels, self.breakers, strict=True)}

    def record(self, index: int, error: Exception | None) -> None:
        """A request to model ``index`` ended: well (``None``) or with ``error``."""
        if not self.breakers:
            return
        breaker = self.breakers[index]
        if error is None:
            breaker.succeeded()
        elif is_model_failure(error) or isinstance(error, StreamProtocolError):
            breaker.failed()
        else:
            breaker.released()

    def release(self, index: int) -> None:
        """A request to model ``index`` was disposed before it ended."""
        if self.breakers:
            self.breakers[index].released()

    def first_chunk_latency(self, index: int, seconds: float) -> None:
        """Model ``index`` sent its first chunk ``seconds`` after its request started."""
        if index == 0 and self._percentile is not None:
            with self._latency_lock:
                self._latencies.append(seconds)

    def hedge_delay(self) -> float | None:
        """Seconds after which a request's second model starts too, or ``None``: no hedge."""
        if self._percentile is None:
            return None if self.hedge_after is None else float(self.hedge_after)
        with self._latency_lock:
            seen = sorted(self._latencies)
        if len(seen) < _MIN_LATENCIES:
            return None
        return seen[min(len(seen) - 1, int(len(seen) * self._percentile / 100))]


def _percentile(hedge_after: float | str | None) -> float | None:
    """The percentile a ``"p90"`` hedge names (``None`` for seconds or no hedge)."""
    if hedge_after is None:
        return None
    if isinstance(hedge_after, str):
        number = hedge_after[1:] if hedge_after[:1] == "p" else ""
        try:
            value = float(number)
        except ValueError:
            value = -1.0
        if not 0 < value < 100:
            raise InvalidArgumentError(
                f"hedge_after: a percentile is 'p1'..'p99', got {hedge_after!r}"
            )
        return value
    if isinstance(hedge_after, bool) or not isinstance(hedge_after, int | float) or hedge_after < 0:
        raise InvalidArgumentError(f"hedge_after must be seconds or 'pNN', got {hedge_after!r}")
    return None


def _breaker_key(label: str, model: Any) -> str:
    """What a breaker is kept under: the model's name and endpoint, so every chain that calls
    the same model at the same place shares it; a model with no endpoint (a scripted one) is
    its own."""
    base_url = getattr(model, "base_url", None)
    where = base_url if isinstance(base_url, str) and base_url else f"object-{id(model):x}"
    return f"{label}@{where}"


def _unique(labels: list[str]) -> tuple[str, ...]:
    """``labels`` with a repeated one numbered (``openai:gpt-5#2``): usage keys apart."""
    seen: dict[str, int] = {}
    out: list[str] = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return tuple(out)
