"""The checks of ``ReactAgent``'s settings, each failing at construction with an
:class:`~rxreact.errors.InvalidArgumentError` that names the setting (a wrong setting found
when the first run starts, or deep inside pydantic, is found late and explained badly)."""

from __future__ import annotations

from typing import Any

from reactivex import abc

from rxreact._validate import (
    check_bool,
    check_instance,
    check_int,
    check_optional_seconds,
    described,
)
from rxreact.context.budget import ContextBudget
from rxreact.errors import InvalidArgumentError
from rxreact.tools.source import ToolSource
from rxreact.tools.tool import Tool

__all__ = ["check_callbacks", "check_settings", "check_waits", "tool_items"]


def check_waits(
    *,
    tool_timeout: Any,
    stall_timeout: Any,
    busy_timeout: Any,
    lease_ttl: Any,
    memory: Any,
) -> tuple[float | None, float | None, float | None, float]:
    """The agent's timeouts, checked against each other: (tool, stall, busy, lease ttl)."""
    tool_timeout = check_optional_seconds("tool_timeout", tool_timeout)
    stall_timeout = check_optional_seconds("stall_timeout", stall_timeout)
    if stall_timeout is not None and tool_timeout is not None and stall_timeout <= tool_timeout:
        raise InvalidArgumentError(
            f"stall_timeout must be longer than tool_timeout, got {stall_timeout} <= {tool_timeout}"
        )
    busy_timeout = check_optional_seconds("busy_timeout", busy_timeout)
    if (
        memory is not None
        and busy_timeout is not None
        and stall_timeout is not None
        and busy_timeout >= stall_timeout
    ):  # a queued run emits nothing while it waits: the watchdog would end it first
        raise InvalidArgumentError("busy_timeout must be shorter than stall_timeout")
    checked_ttl = check_optional_seconds("lease_ttl", lease_ttl)
    if checked_ttl is None:
        raise InvalidArgumentError("lease_ttl must be a positive number of seconds, not None")
    return tool_timeout, stall_timeout, busy_timeout, checked_ttl


def check_settings(
    *,
    max_revisions: Any,
    context_budget: Any,
    max_tool_errors: Any,
    on_busy: Any,
    buffer_size: Any,
    memory: Any,
    system_prompt: Any,
    judge: Any,
    approver: Any,
    event_log: Any,
    scheduler: Any,
    tools_scheduler: Any,
    forced_final_instruction: Any,
    send_reasoning: Any,
    trace_content: Any,
) -> None:
    """Every other setting whose check has no value to return."""
    check_int("max_revisions", max_revisions, 0)
    if context_budget is not None and not isinstance(context_budget, ContextBudget):
        raise InvalidArgumentError(
            f"context_budget must be a ContextBudget, got {described(context_budget)}"
        )
    check_int("max_tool_errors", max_tool_errors, 0)
    if on_busy not in ("queue", "reject"):
        raise InvalidArgumentError(f"on_busy must be 'queue' or 'reject', got {on_busy!r}")
    if buffer_size is not None:
        check_int("buffer_size", buffer_size, 1)
    # load and append are what a memory must have; one without the lease methods (written
    # before they existed) still works, its runs kept apart in this process only.
    check_instance("memory", memory, "a ChatMemory")
    if memory is not None and not all(
        callable(getattr(memory, name, None)) for name in ("load", "append")
    ):
        raise InvalidArgumentError(f"memory must be a ChatMemory, got {described(memory)}")
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise InvalidArgumentError(f"system_prompt must be a str, got {described(system_prompt)}")
    check_callbacks(judge=judge, approver=approver, event_log=event_log)
    for setting, value in (("scheduler", scheduler), ("tools_scheduler", tools_scheduler)):
        if value is not None and not isinstance(value, abc.SchedulerBase):
            raise InvalidArgumentError(f"{setting} must be a scheduler, got {described(value)}")
    if not isinstance(forced_final_instruction, str) or not forced_final_instruction:
        raise InvalidArgumentError(
            f"forced_final_instruction must be a non-empty str, got "
            f"{described(forced_final_instruction)}"
        )
    check_bool("send_reasoning", send_reasoning)
    if trace_content is not None:
        check_bool("trace_content", trace_content)


def check_callbacks(**callbacks: Any) -> None:
    """A judge, an approver, an event log: ``None`` or an instance, never a class (a class is
    callable, and would be called in place of the judge or approver it was meant to be)."""
    for name, value in callbacks.items():
        if value is None:
            continue
        check_instance(name, value, "an instance")
        if name != "event_log" and not callable(value):
            raise InvalidArgumentError(f"{name} must be callable, got {described(value)}")
        if name == "event_log" and not callable(getattr(value, "begin", None)):
            raise InvalidArgumentError(f"event_log must be an EventLog, got {described(value)}")


def tool_items(tools: Any) -> list[Any]:
    """The items of ``tools``, refusing a lone tool or anything that is not a list of them."""
    if isinstance(tools, Tool) or callable(tools) or isinstance(tools, str | bytes):
        raise InvalidArgumentError(
            f"tools must be a list of tools, got {described(tools)}: write tools=[...]"
        )
    try:
        items = list(tools)
    except TypeError:
        message = f"tools must be a list of tools, got {described(tools)}"
        raise InvalidArgumentError(message) from None
    for item in items:
        if not callable(item) and not isinstance(item, ToolSource):
            raise InvalidArgumentError(
                f"tools must hold @tool functions, plain functions or tool sources (an "
                f"MCPServer), got {described(item)}"
            )
    return items
