"""How a Bedrock request proves who sends it: AWS SigV4, or a Bedrock API key.

SigV4 (:mod:`~rxreact.model.bedrock.sigv4`, held to botocore's signer by a test) uses botocore's
credential chain (the ``rxreact[bedrock]`` extra), so
the credentials are found where every AWS tool finds them: the environment
(``AWS_ACCESS_KEY_ID``...), a profile (``AWS_PROFILE``, SSO included), a container or instance
role. Refreshable credentials (SSO, roles) are read again at each request, frozen for that one
signature. botocore is used for nothing else: the request goes out on rxreact's own transport.

A Bedrock API key (``AWS_BEARER_TOKEN_BEDROCK``) is a bearer token and needs no signature.
"""

from __future__ import annotations

import importlib
from typing import Any

from rxreact.errors import ConfigurationError
from rxreact.model.bedrock.sigv4 import sign_v4

__all__ = ["SigV4Signer", "region_of"]

SERVICE = "bedrock"
"""The signing name of Bedrock's runtime endpoints."""


def _botocore(module: str) -> Any:
    try:
        return importlib.import_module(f"botocore.{module}")
    except ImportError as exc:
        raise ConfigurationError(
            "BedrockModel signs requests with botocore: pip install 'rxreact[bedrock]' "
            "(or set AWS_BEARER_TOKEN_BEDROCK to use a Bedrock API key)"
        ) from exc


def region_of(region: str | None, environ: dict[str, str]) -> str | None:
    """``region=`` first, then ``$AWS_REGION``, ``$AWS_DEFAULT_REGION``, then the profile's."""
    found = region or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    if found:
        return found
    try:
        session = _botocore("session").get_session()
    except ConfigurationError:
        return None
    profile_region = session.get_config_variable("region")
    return str(profile_region) if profile_region else None


_NETWORK_PROVIDERS = ("container-role", "iam-role")
"""The chain's providers that ask a metadata service over the network."""


def _chain_credentials(local: bool) -> Any:
    session = _botocore("session").get_session()
    if not local:
        return session.get_credentials()
    resolver = session.get_component("credential_provider")
    for name in _NETWORK_PROVIDERS:
        resolver.remove(name)
    return resolver.load_credentials()


class SigV4Signer:
    """Signs one request at a time with the credential chain's current credentials.

    Args:
        region: the region the endpoint is in (part of every signature).
        credentials: botocore credentials to use instead of the chain's (tests, or a caller
            that resolved its own).
        local: the endpoint is on loopback (a proxy, the mock): the chain stops before the
            container and instance roles, whose metadata services are network calls.

    Raises:
        ConfigurationError: botocore is missing, or the chain found no credentials.
    """

    __slots__ = ("_credentials", "region")

    def __init__(self, region: str, credentials: Any = None, *, local: bool = False) -> None:
        if credentials is None:
            credentials = _chain_credentials(local)
        if credentials is None:
            raise ConfigurationError(
                "no AWS credentials for Bedrock: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, run where a role is attached, or set "
                "AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key)"
            )
        self._credentials = credentials
        self.region: str = region

    def sign(self, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        """``headers`` with the SigV4 ``Authorization``, ``X-Amz-Date`` (and the session
        token, when the credentials have one) for a POST of ``body`` to ``url``."""
        credentials = self._credentials
        frozen = (
            credentials.get_frozen_credentials()
            if hasattr(credentials, "get_frozen_credentials")
            else credentials
        )
        return sign_v4(
            url,
            headers,
            body,
            access_key=frozen.access_key,
            secret_key=frozen.secret_key,
            token=frozen.token,
            region=self.region,
            service=SERVICE,
        )
