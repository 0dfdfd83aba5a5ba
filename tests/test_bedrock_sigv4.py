"""rxreact's SigV4 (rxreact.model.bedrock.sigv4) signs exactly as botocore's SigV4Auth does:
the same Authorization, X-Amz-Date and session token for the same request and time, over
the paths, queries, ports and headers a Bedrock request can have."""

from __future__ import annotations

import datetime

import pytest

botocore_auth = pytest.importorskip("botocore.auth")
from botocore.awsrequest import AWSRequest  # noqa: E402
from botocore.credentials import Credentials  # noqa: E402

from rxreact.model.bedrock.sigv4 import sign_v4  # noqa: E402

NOW = datetime.datetime(2026, 12, 1, 23, 59, 58, tzinfo=datetime.UTC)


def botocore_headers(
    url: str,
    headers: dict[str, str],
    body: bytes,
    token: str | None,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, str]:
    monkeypatch.setattr(botocore_auth, "get_current_datetime", lambda: NOW.replace(tzinfo=None))
    request = AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
    credentials = Credentials("AKIAEXAMPLE000000001", "secret/key+with=chars", token)
    botocore_auth.SigV4Auth(credentials, "bedrock", "eu-central-1").add_auth(request)
    return dict(request.headers.items())


@pytest.mark.parametrize(
    "url",
    [
        "https://bedrock-runtime.eu-central-1.amazonaws.com/model/us.amazon.nova-pro-v1%3A0/converse-stream",
        "http://127.0.0.1:8123/model/anthropic.claude-3%3A0/converse",
        "https://proxy.example.invalid:8443/v1/./model//m/../m2/converse?b=2&a=1",
        "https://proxy.example.invalid/model/m/converse?a=2&a-b=1&a=1",
        "https://host.example.invalid/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx/converse-stream",
    ],
)
@pytest.mark.parametrize("token", [None, "session-token-value"])
def test_the_signature_is_botocores(
    url: str, token: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/vnd.amazon.eventstream",
        "X-Extra": "  spaced   value ",
        "User-Agent": "not signed",
    }
    body = '{"messages":[{"role":"user","content":[{"text":"Grüß dich"}]}]}'.encode()
    ours = sign_v4(
        url,
        headers,
        body,
        access_key="AKIAEXAMPLE000000001",
        secret_key="secret/key+with=chars",
        token=token,
        region="eu-central-1",
        service="bedrock",
        now=NOW,
    )
    theirs = botocore_headers(url, headers, body, token, monkeypatch)
    for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
        assert ours.get(name) == theirs.get(name), name
