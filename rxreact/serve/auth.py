"""Users of the web app: the bearer-token authenticator of ``rxreact serve --token-file``, and
what a user owns (conversation keys, run ids).

Ownership without a table: a user's conversation ``c`` is stored under ``user/c``, the user
percent-encoded (it never contains ``/``, so the first ``/`` ends it and two users' keys never
meet, whatever ``/`` their conversation ids hold), and the run ids a user
is given are signed with the user (``<run>.<tag>``), so any worker sharing the secret can tell
whose run an id names. Another user's id fails the check and is answered ``404``, like an
unknown one, so ids cannot be probed. The anonymous user of an app without authentication
keeps the plain ids: data written before authentication existed still works.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

from starlette.requests import Request

from rxreact._validate import MAX_CONVERSATION_ID
from rxreact.errors import ConfigurationError
from rxreact.serve._body import HTTPProblem

__all__ = ["MIN_TOKEN_CHARS", "RunIds", "TokenAuthenticator", "conversation_key"]

MIN_TOKEN_CHARS = 16
"""The shortest token accepted: a shorter one (or an empty one, an unset variable) is guessable."""


def conversation_key(user: str, conversation_id: str) -> str:
    """Where ``user``'s conversation lives in memory and in the event log: the id itself for
    the anonymous user (``""``), ``user/id`` for anyone else (``user`` percent-encoded).

    Raises:
        HTTPProblem: 400 when the key would be longer than a conversation id may be.
    """
    if not user:
        return conversation_id
    key = f"{quote(user, safe='')}/{conversation_id}"
    if len(key) > MAX_CONVERSATION_ID:
        raise HTTPProblem(
            400,
            "invalid_conversation_id",
            f"conversation_id is too long: with the user's name it must fit in "
            f"{MAX_CONVERSATION_ID} characters",
        )
    return key


class TokenAuthenticator:
    """Bearer tokens from a file, one ``token user`` a line (``#`` comments, blank lines).

    ``authenticate(request)`` reads ``Authorization: Bearer <token>`` (the chat page sends it
    with every fetch, the marble diagram's too: no cookie carries a token) and answers the
    token's user or ``None``. Tokens are compared in constant time; an empty one matches none.

    ::

        # tokens.txt
        3f9c0b...e1  alice
        77d2aa...04  bob

    Args:
        tokens: ``{token: user}``, each token of :data:`MIN_TOKEN_CHARS` or more characters
            (no spaces) and each user a non-empty name.

    Raises:
        ConfigurationError: no tokens, a short or empty token, an empty user.
    """

    def __init__(self, tokens: Mapping[str, str]) -> None:
        if not tokens:
            raise ConfigurationError("a token authenticator needs at least one token")
        for token, user in tokens.items():
            if not isinstance(token, str) or len(token.strip()) < MIN_TOKEN_CHARS:
                shown = "an empty token" if not token else f"a {len(token)}-character token"
                raise ConfigurationError(
                    f"{shown} for user {user!r}: tokens need {MIN_TOKEN_CHARS}+ characters "
                    "(an unset environment variable gives an empty one)"
                )
            if token != token.strip() or not isinstance(user, str) or not user.strip():
                raise ConfigurationError(
                    f"the token of user {user!r}: tokens have no surrounding spaces, users a name"
                )
        self._tokens = [(t.encode(), u) for t, u in tokens.items()]
        digest = hashlib.sha256()
        for token, user in sorted(tokens.items()):
            digest.update(f"{token}\0{user}\n".encode())
        self.secret: bytes = digest.digest()
        """A secret every process reading the same tokens derives alike (run id signatures)."""

    @classmethod
    def from_file(cls, path: str | Path) -> TokenAuthenticator:
        """Read ``token user`` lines from ``path`` (UTF-8, a byte order mark allowed).

        Raises:
            ConfigurationError: the file cannot be read, is readable by group or others
                (``chmod 600`` it), is not UTF-8, has a malformed line, or lists a token twice.
        """
        file = Path(path)
        try:
            if os.name == "posix" and file.stat().st_mode & 0o044:
                raise ConfigurationError(
                    f"the token file {str(path)!r} is readable by other users of this machine "
                    f"(mode {file.stat().st_mode & 0o777:o}): chmod 600 {str(path)!r}"
                )
            text = file.read_bytes().decode("utf-8-sig")
        except OSError as error:
            raise ConfigurationError(f"cannot read the token file {str(path)!r}: {error}") from None
        except UnicodeDecodeError as error:
            raise ConfigurationError(
                f"the token file {str(path)!r} is not UTF-8 (byte {error.start}: "
                f"{error.object[error.start : error.start + 1]!r})"
            ) from None
        tokens: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if len(fields) != 2 or len(fields[0]) < MIN_TOKEN_CHARS:
                raise ConfigurationError(
                    f"{path}:{number}: expected 'token user' with a token of "
                    f"{MIN_TOKEN_CHARS}+ characters"
                )
            if fields[0] in tokens:
                raise ConfigurationError(
                    f"{path}:{number}: this token is listed already (for {tokens[fields[0]]!r}): "
                    "each token names one user"
                )
            tokens[fields[0]] = fields[1]
        return cls(tokens)

    def __call__(self, request: Request) -> str | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        presented = token.strip().encode()
        if scheme.lower() != "bearer" or not presented:
            return None
        found = None
        for known, user in self._tokens:  # every token compared: no early exit to time
            if hmac.compare_digest(known, presented):
                found = user
        return found


class RunIds:
    """Run ids as a user sees them: ``<run>.<tag>``, the tag a MAC of user and run.

    Args:
        secret: the MAC key; workers that serve the same users share it (a random one serves
            one process).
    """

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def public(self, user: str, run_id: str) -> str:
        """The id ``user`` is given for ``run_id`` (the anonymous user: the run id itself)."""
        return f"{run_id}.{self._tag(user, run_id)}" if user else run_id

    def private(self, user: str, public_id: str) -> str | None:
        """The run id behind ``public_id`` if ``user`` owns it, else ``None``."""
        if not user:
            return public_id
        run_id, _, tag = public_id.rpartition(".")
        if not run_id or not hmac.compare_digest(tag, self._tag(user, run_id)):
            return None
        return run_id

    def _tag(self, user: str, run_id: str) -> str:
        mac = hmac.new(self._secret, f"{user}\0{run_id}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac[:15]).decode()
