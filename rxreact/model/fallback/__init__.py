"""Staying up when a provider does not: :class:`FallbackModel` (a chain of models, failover
before and after the first chunk, hedged requests) and :class:`CircuitBreaker`.

- :mod:`~rxreact.model.fallback.fallback_model`: the model, its settings and what a chain asks.
- :mod:`~rxreact.model.fallback._chain`: one stream subscription's attempts.
- :mod:`~rxreact.model.fallback._hold`: chunks held behind a sentence or a lag.
- :mod:`~rxreact.model.fallback.breaker`: the per-model circuit breakers.
- :mod:`~rxreact.model.fallback._policy`: which errors move on; models' names.
"""

from rxreact.model.fallback.breaker import (
    DEFAULT_BREAKER,
    BreakerState,
    CircuitBreaker,
    ModelBreaker,
)
from rxreact.model.fallback.fallback_model import FallbackModel

__all__ = ["DEFAULT_BREAKER", "BreakerState", "CircuitBreaker", "FallbackModel", "ModelBreaker"]
