"""The key names of a Redis chat memory: the historical ones on one node, hash-tagged ones on
a Redis Cluster so that every key of one conversation lives in one slot."""

from __future__ import annotations

import re

__all__ = ["ClusterKeys", "ConversationKeys"]

_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")


def _glob_escaped(text: str) -> str:
    return _GLOB_SPECIAL.sub(r"\\\1", text)


class ConversationKeys:
    """One node: ``{prefix}turns:{id}``, ``{prefix}lease:{id}``, ``{prefix}fence:{id}``.

    These are the names rxreact has always used on one node; they stay, so that histories
    stored before Redis Cluster support are read as they are.
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def turns(self, conversation_id: str) -> str:
        return f"{self.prefix}turns:{conversation_id}"

    def lease(self, conversation_id: str) -> str:
        return f"{self.prefix}lease:{conversation_id}"

    def fence(self, conversation_id: str) -> str:
        return f"{self.prefix}fence:{conversation_id}"

    def turns_pattern(self) -> str:
        """A SCAN ``MATCH`` pattern of every history key under the prefix."""
        return _glob_escaped(self.turns("")) + "*"

    def conversation_id(self, turns_key: bytes) -> str:
        """The id in a key :meth:`turns_pattern` matched."""
        return turns_key[len(self.turns("").encode()) :].decode()


class ClusterKeys(ConversationKeys):
    """Redis Cluster: ``{prefix}{c:<id>}:turns``, ``...:lease``, ``...:fence``.

    The braces are the hash tag: a cluster places a key by the text between its first ``{``
    and the first ``}`` after it, so a conversation's keys, which share everything up to and
    including the closing brace, share a slot and one script may touch them all. The ``c:``
    keeps the tag non-empty for the empty id (``{}`` would hash the whole key); an id holding
    ``}`` ends the tag early, but at the same place in each of its keys, so they still agree;
    a prefix holding ``{`` likewise.
    """

    def _key(self, conversation_id: str, kind: str) -> str:
        return f"{self.prefix}{{c:{conversation_id}}}:{kind}"

    def turns(self, conversation_id: str) -> str:
        return self._key(conversation_id, "turns")

    def lease(self, conversation_id: str) -> str:
        return self._key(conversation_id, "lease")

    def fence(self, conversation_id: str) -> str:
        return self._key(conversation_id, "fence")

    def turns_pattern(self) -> str:
        return _glob_escaped(f"{self.prefix}{{c:") + "*" + _glob_escaped("}:turns")

    def conversation_id(self, turns_key: bytes) -> str:
        start = len(f"{self.prefix}{{c:".encode())
        return turns_key[start : -len(b"}:turns")].decode()
