"""Keeping a history valid for the chat-completions API.

The API rejects (HTTP 400) a request whose history has an assistant ``tool_calls`` entry that
no ``tool`` message answers before the next turn. :func:`ensure_tool_calls_closed` makes that
impossible: every request the agent sends goes through it.
"""

from __future__ import annotations

from collections.abc import Sequence

from rxreact.messages import AssistantMessage, Message, ToolMessage

__all__ = ["NOT_EXECUTED", "ensure_tool_calls_closed"]

NOT_EXECUTED = "Not executed: this tool call was not run, so there is no result."
"""The response synthesized for a tool call that never got one."""


def ensure_tool_calls_closed(
    messages: Sequence[Message], *, response: str = NOT_EXECUTED
) -> list[Message]:
    """Return ``messages`` with a ``tool`` response after every unanswered tool call.

    A synthesized response goes right after the tool messages that follow the assistant
    message, in call order, so the answered and the synthesized ones form one block. Tool
    messages answering no call are dropped (the API rejects them too). Already valid histories
    come back equal.

    ::

        [user, assistant(calls a, b), tool(a), user]
        -> [user, assistant(calls a, b), tool(a), tool(b: not executed), user]
    """
    result: list[Message] = []
    # (id, name) of the last assistant message's calls not answered yet. A list, not a dict:
    # two calls with one id (an old history, a provider bug) each keep their own response.
    open_calls: list[tuple[str, str]] = []

    def close_open() -> None:
        for call_id, name in open_calls:
            result.append(ToolMessage(tool_call_id=call_id, content=response, name=name))
        open_calls.clear()

    for message in messages:
        if isinstance(message, ToolMessage):
            for i, (call_id, _) in enumerate(open_calls):
                if call_id == message.tool_call_id:
                    del open_calls[i]
                    result.append(message)
                    break
            continue
        close_open()
        result.append(message)
        if isinstance(message, AssistantMessage):
            open_calls.extend((call.id, call.name) for call in message.tool_calls)
    close_open()
    return result
