"""AWS Signature Version 4 for one request: the canonical request, the string to sign, the
derived key, the ``Authorization`` header.

Why our own and not botocore's ``SigV4Auth``: through ``AWSRequest`` (its ``email.message``
headers, URL re-parsing and logging) one signature costs ~1.5 ms of CPU inside a run, about
half of a short conversation's whole fixed cost on the bench workload; this is the same
algorithm in ~60 µs. It signs exactly as botocore does for a Bedrock request (the same
headers, the path normalised and encoded again, the body's SHA-256), and a test holds the two
to the same ``Authorization`` for the same inputs and time. botocore still finds the
credentials (:mod:`rxreact.model.bedrock.signing`).
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
from collections.abc import Mapping
from urllib.parse import quote, urlsplit

__all__ = ["sign_v4"]

_UNSIGNED = frozenset(
    {
        "baggage",
        "connection",
        "expect",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "traceparent",
        "tracestate",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "x-amzn-trace-id",
    }
)
"""Headers botocore leaves out of a signature (hop-by-hop ones, and ones proxies rewrite)."""
_DEFAULT_PORTS = {"http": 80, "https": 443}


def sign_v4(
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    access_key: str,
    secret_key: str,
    token: str | None,
    region: str,
    service: str,
    now: datetime.datetime | None = None,
) -> dict[str, str]:
    """``headers`` plus ``X-Amz-Date``, ``X-Amz-Security-Token`` (with a session token) and
    ``Authorization`` for a POST of ``body`` to ``url``."""
    moment = now or datetime.datetime.now(datetime.UTC)
    stamp = moment.strftime("%Y%m%dT%H%M%SZ")
    day = stamp[:8]
    out = {k: v for k, v in headers.items() if k.lower() not in ("authorization", "x-amz-date")}
    out["X-Amz-Date"] = stamp
    if token:
        out["X-Amz-Security-Token"] = token
    parts = urlsplit(url)
    signed = {k.lower(): " ".join(v.split()) for k, v in out.items() if k.lower() not in _UNSIGNED}
    if "host" not in signed:
        host = parts.hostname or ""
        if parts.port is not None and parts.port != _DEFAULT_PORTS.get(parts.scheme):
            host = f"{host}:{parts.port}"
        signed["host"] = host
    names = sorted(signed)
    # Sorted by (key, value) as botocore sorts them, not as joined strings ("a-b" < "a").
    pairs = sorted(p.partition("=")[::2] for p in parts.query.split("&")) if parts.query else []
    query = "&".join(f"{key}={value}" for key, value in pairs)
    canonical = "\n".join(
        (
            "POST",
            quote(_normalized(parts.path), safe="/~"),
            query,
            "".join(f"{name}:{signed[name]}\n" for name in names),
            ";".join(names),
            hashlib.sha256(body).hexdigest(),
        )
    )
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        ("AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest())
    )
    key = f"AWS4{secret_key}".encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    out["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return out


def _normalized(path: str) -> str:
    """RFC 3986's dot segments removed and empty segments dropped, as AWS requires."""
    if not path:
        return "/"
    segments: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if segments:
                segments.pop()
        elif segment and segment != ".":
            segments.append(segment)
    tail = "/" if path.endswith("/") and segments else ""
    return ("/" if path.startswith("/") else "") + "/".join(segments) + tail
