"""Chat memory: conversation histories kept between runs, by conversation id.

Four backends keep the same :class:`ChatMemory` contract: :class:`InMemoryChatMemory` (one
process, gone when it exits), :class:`SQLiteChatMemory` (a file: survives restarts, the CLI's
default), :class:`RedisChatMemory` and :class:`PostgresChatMemory` (shared by many processes
and machines; they need the ``redis`` / ``postgres`` extra, imported only when one is
constructed).

Each also grants conversation leases (:class:`Lease`): one run per conversation at a time,
across every process sharing the store; see :class:`ChatMemory` for the contract.
"""

from rxreact.memory.base import ChatMemory
from rxreact.memory.in_memory import InMemoryChatMemory
from rxreact.memory.lease import Lease, LeaseTable
from rxreact.memory.postgres import PostgresChatMemory
from rxreact.memory.redis import RedisChatMemory
from rxreact.memory.sqlite import SQLiteChatMemory

__all__ = [
    "ChatMemory",
    "InMemoryChatMemory",
    "Lease",
    "LeaseTable",
    "PostgresChatMemory",
    "RedisChatMemory",
    "SQLiteChatMemory",
]
