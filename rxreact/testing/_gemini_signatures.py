"""The mock's Gemini thought signatures: issued on function calls (and text), checked when the
history comes back, under Google's rules, by both Gemini dialects (native and
OpenAI-compatible).

A signature is base64 of an HMAC, under a key of the mock's own, of what it signs (a call's
name and arguments, a text), so the server can tell that one came back unchanged, on the call
it was issued for. Google's documented placeholder is taken for any call, as Gemini takes it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import secrets
from typing import Any

__all__ = ["PLACEHOLDER", "sign_call", "sign_text", "signature_matches"]

_KEY = secrets.token_bytes(16)
PLACEHOLDER = "skip_thought_signature_validator"
"""What Gemini takes in place of a signature a history from another model cannot have."""


def _mac(data: bytes) -> str:
    digest = hmac.new(_KEY, data, hashlib.sha256).digest()[:24]
    return base64.b64encode(b"mock-sig:" + digest).decode()


def _canonical(arguments: Any) -> str:
    if isinstance(arguments, str):
        # Signed as sent when it is not JSON: a call the model wrote badly is still its own.
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments or "{}")
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"))


def sign_call(name: str, arguments: Any) -> str:
    """The signature the mock gives a function call (arguments: an object or its JSON)."""
    return _mac(b"call:" + name.encode() + b"\0" + _canonical(arguments).encode())


def sign_text(text: str) -> str:
    """The signature the mock gives the last text part of an answer without calls."""
    return _mac(b"text:" + text.encode())


def signature_matches(signature: Any, name: str, arguments: Any) -> bool:
    """Whether ``signature`` is this call's own, or the placeholder."""
    if signature == PLACEHOLDER:
        return True
    return isinstance(signature, str) and hmac.compare_digest(signature, sign_call(name, arguments))
