"""When a fallback model moves on, and what its models are called."""

from __future__ import annotations

from typing import Any

from rxreact.errors import (
    AuthenticationError,
    BadRequestError,
    ModelError,
    ModelTimeoutError,
    ProviderStreamError,
)

__all__ = ["first_label", "is_model_failure", "member", "model_label"]


def is_model_failure(error: BaseException) -> bool:
    """Whether ``error`` says the model is unwell, not the request wrong: a retryable error
    (429, 5xx, a connection error, a cut stream; after the model's own retries), a timeout, an
    error event in the stream. A bad request (400) or a refused key (401, 403) is not: the next
    model would most likely refuse it too, or it must be fixed, not hidden."""
    if not isinstance(error, ModelError) or isinstance(
        error, BadRequestError | AuthenticationError
    ):
        return False
    return error.retryable or isinstance(error, ModelTimeoutError | ProviderStreamError)


def model_label(model: Any) -> str:
    """A model's name in events and usage: ``provider:model`` when it says both
    (``openai:gpt-5``), its ``label`` when it has one, else its class name."""
    label = getattr(model, "label", None)
    if isinstance(label, str) and label:
        return label
    name = getattr(model, "model", None)
    provider = getattr(model, "provider", None)
    if isinstance(name, str) and name:
        return f"{provider}:{name}" if isinstance(provider, str) and provider else name
    return type(model).__name__


def first_label(model: Any) -> str:
    """The name of the model a request to ``model`` goes to first (a chain's first model)."""
    labels = getattr(model, "labels", None)
    if isinstance(labels, tuple) and labels:
        return str(labels[0])
    return model_label(model)


def member(model: Any, label: str) -> Any:
    """The model of the chain ``model`` that ``label`` names (``model`` itself if no chain)."""
    labels = getattr(model, "labels", None)
    if isinstance(labels, tuple) and label in labels:
        return model.models[labels.index(label)]
    return model
