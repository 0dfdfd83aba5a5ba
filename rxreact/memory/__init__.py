"""Chat memory: conversation histories kept between runs, by conversation id.

Three backends keep the same :class:`ChatMemory` contract: :class:`InMemoryChatMemory` (one
process, gone when it exits), :class:`SQLiteChatMemory` (a file: survives restarts, the CLI's
default) and :class:`RedisChatMemory` (shared by many processes and machines; needs the
``redis`` extra, imported only when one is constructed).

Each also grants conversation leases (:class:`Lease`): one run per conversation at a time,
across every process sharing the store; see :class:`ChatMemory` for the contract.
"""

from rxreact.memory.base import ChatMemory
from rxreact.memory.in_memory import InMemoryChatMemory
from rxreact.memory.lease import Lease, LeaseTable
from rxreact.memory.redis import RedisChatMemory
from rxreact.memory.sqlite import SQLiteChatMemory

__all__ = [
    "ChatMemory",
    "InMemoryChatMemory",
    "Lease",
    "LeaseTable",
    "RedisChatMemory",
    "SQLiteChatMemory",
]
