"""Chat memory: conversation histories kept between runs, by conversation id."""

from rxreact.memory.base import ChatMemory
from rxreact.memory.in_memory import InMemoryChatMemory

__all__ = ["ChatMemory", "InMemoryChatMemory"]
