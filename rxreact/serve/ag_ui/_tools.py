"""Client-side tools: tools an AG-UI front end declares in ``RunAgentInput.tools`` and runs
itself.

The model sees them as any other tool. A call of one must wait for the front end, which
answers in its *next* request, and the run holds no thread while it waits. That is what a
call waiting for approval already does (``tool_approval_requested``, no tool timeout, the
stall watchdog knows a waiting run is not stalled), so a client-side tool is a proxy that
always requires approval: the result the front end sends is put in the proxy's mailbox,
then the call is approved, and the proxy returns the result from the mailbox.
"""

from __future__ import annotations

import copy
import json
import threading
from collections import defaultdict, deque
from collections.abc import Iterable
from typing import Any

import reactivex

from rxreact.agent.react_agent import ReactAgent
from rxreact.events import ToolApprovalRequested, ToolExecutionStarted, ToolResult
from rxreact.serve._body import HTTPProblem
from rxreact.tools.tool import TOOL_NAME, Tool

__all__ = ["ClientTools", "with_client_tools"]


class ClientTools:
    """The proxies of one run's client-side tools, the results waiting for them, and which of
    the run's calls wait for the client now (client-side tools and approvals alike)."""

    def __init__(self, declared: Iterable[Any]) -> None:
        self.tools: dict[str, Tool[..., Any]] = {}
        for declaration in declared:
            name = declaration.name
            if not TOOL_NAME.fullmatch(name):
                raise HTTPProblem(
                    422, "invalid_body", f"tool name {name!r}: use 1 to 64 of a-z A-Z 0-9 _ -"
                )
            self.tools[name] = Tool(
                name=name,
                description=declaration.description or name,
                parameters=declaration.parameters or {"type": "object", "properties": {}},
                function=self._proxy(name),
                requires_approval=True,
            )
        self._lock = threading.Lock()
        self._calls: dict[str, str] = {}  # call id -> mailbox key, while it waits
        self._waiting: set[str] = set()  # every call waiting for a decision or a result
        self._mailbox: defaultdict[str, deque[str]] = defaultdict(deque)

    @property
    def names(self) -> frozenset[str]:
        """The names of the client-side tools."""
        return frozenset(self.tools)

    def observe(self, event: Any) -> None:
        """Follow the run's calls (fed every event of the run): which wait, which began."""
        with self._lock:
            if isinstance(event, ToolApprovalRequested):
                self._waiting.add(event.call_id)
                if event.name in self.tools:
                    self._calls[event.call_id] = _key(event.name, event.arguments)
            elif isinstance(event, ToolExecutionStarted | ToolResult):
                self._waiting.discard(event.call_id)
                self._calls.pop(event.call_id, None)

    def still_waiting(self) -> frozenset[str]:
        """The calls of the run that wait for a decision or a result now."""
        with self._lock:
            return frozenset(self._waiting)

    def waiting(self, call_id: str) -> bool:
        """Whether the call is one of these tools' and still waits for its result."""
        with self._lock:
            return call_id in self._calls

    def answer(self, call_id: str, content: str) -> bool:
        """Put the front end's result for the call in the mailbox (False: it waits no more);
        the caller then approves the call, which runs the proxy."""
        with self._lock:
            key = self._calls.pop(call_id, None)
            if key is None:
                return False
            self._mailbox[key].append(content)
            return True

    def _proxy(self, name: str) -> Any:
        def proxy(**arguments: Any) -> Any:
            # The proxy has no call id, only the arguments: a result goes in under the call's
            # name and arguments, and two waiting calls alike in both are interchangeable.
            with self._lock:
                queue = self._mailbox.get(_key(name, arguments))
                if queue:
                    return queue.popleft()
            # Approved by someone else than the front end (a server-side approver): no result.
            raise RuntimeError(f"the front end sent no result for {name}")

        return proxy


def _key(name: str, arguments: dict[str, Any]) -> str:
    return name + "\0" + json.dumps(arguments, sort_keys=True, default=str)


def with_client_tools(agent: ReactAgent, tools: ClientTools) -> ReactAgent:
    """``agent`` offering the client-side tools too (a shallow copy: memory, event log, model
    shared). A server tool of the same name wins: the front end's is not offered.

    The agent's own ``approver`` still decides its tools; a client-side call is left waiting
    for the front end (its approval is the front end's result).
    """
    clone = copy.copy(agent)
    clone.tools = {**tools.tools, **agent.tools}
    own = agent.approver
    if own is not None:
        names = tools.names - set(agent.tools)

        def approver(request: ToolApprovalRequested) -> Any:
            return reactivex.never() if request.name in names else own(request)

        clone.approver = approver
    return clone
