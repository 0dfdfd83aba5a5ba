"""rxreact: a streaming ReAct agent built as ReactiveX pipelines.

::

    from rxreact import ReactAgent, OpenAIChatModel, tool

    @tool
    def get_weather(city: str) -> str:
        \"\"\"Current weather for a city.\"\"\"
        return "sunny"

    agent = ReactAgent(model=OpenAIChatModel(), tools=[get_weather])
    for piece in agent.iter_text("Weather in Paris?"):
        print(piece, end="", flush=True)
    print()
"""

# Every public name is imported on first use (module __getattr__, PEP 562): `import rxreact`,
# and the `rxreact` command's --version and --help, load only what they touch, instead of every
# module of the package (1-3 s on a busy machine). Type checkers read the imports below.

import importlib as _importlib
import importlib.abc as _importlib_abc
import importlib.util as _importlib_util
import sys as _sys
import typing as _typing
from typing import Any as _Any

if _typing.TYPE_CHECKING:
    from rxreact.agent.react_agent import FORCED_FINAL_INSTRUCTION, AgentResult, ReactAgent
    from rxreact.cancellation import CancellationToken
    from rxreact.checks.guardrails import GuardrailResult
    from rxreact.checks.judge import LLMJudge, Verdict
    from rxreact.context.budget import ContextBudget
    from rxreact.errors import (
        AgentError,
        ApprovalDecisionError,
        AuthenticationError,
        BadRequestError,
        ChatMemoryError,
        ConfigurationError,
        ContentBlockedError,
        ConversationBusyError,
        GuardrailTrippedError,
        InvalidArgumentError,
        JudgeError,
        MaxHandoffsExceededError,
        ModelConnectionError,
        ModelError,
        ModelHTTPError,
        ModelTimeoutError,
        NotFoundError,
        OutputValidationError,
        ProviderStreamError,
        RateLimitError,
        ResponseTooLargeError,
        RunCancelledError,
        RunError,
        RunLostError,
        RunNotFoundError,
        RunStalledError,
        RxReactError,
        ServerError,
        StreamInterruptedError,
        StreamProtocolError,
        ToolDefinitionError,
        ToolErrorBudgetExceededError,
        ToolSourceError,
    )
    from rxreact.events import (
        AgentEvent,
        AnswerValidated,
        ContextTrimmed,
        FinalAnswer,
        GuardrailPassed,
        GuardrailStarted,
        GuardrailTripped,
        Handoff,
        MaxRoundsReached,
        OutputPartial,
        OutputReset,
        ReasoningDelta,
        RoundFinished,
        RoundModeDecided,
        RoundRestarted,
        RoundStarted,
        TextDelta,
        ToolApprovalRequested,
        ToolCallArgsDelta,
        ToolCallStarted,
        ToolExecutionStarted,
        ToolProgress,
        ToolResult,
        ValidationStarted,
    )
    from rxreact.history import ensure_tool_calls_closed
    from rxreact.memory import ChatMemory, InMemoryChatMemory, RedisChatMemory, SQLiteChatMemory
    from rxreact.memory.postgres import PostgresChatMemory
    from rxreact.messages import (
        AssistantMessage,
        ChatRequest,
        File,
        Image,
        Message,
        SystemMessage,
        Text,
        ToolCall,
        ToolMessage,
        ToolSpec,
        Usage,
        UserMessage,
    )
    from rxreact.model.anthropic.client import AnthropicModel
    from rxreact.model.base import ChatModel
    from rxreact.model.bedrock.client import BedrockModel
    from rxreact.model.chunks import ChatChunk, ModelResponse, ToolCallDelta
    from rxreact.model.gemini.client import GeminiModel
    from rxreact.model.openai.client import OpenAIChatModel
    from rxreact.model.openai.responses import OpenAIResponsesModel
    from rxreact.model.scripted.model import ScriptedModel
    from rxreact.model.spec import model_from
    from rxreact.operators import events_of, from_agent, only_root
    from rxreact.runs import (
        AgentRun,
        EventLog,
        InMemoryEventLog,
        RedisEventLog,
        SQLiteEventLog,
        follow,
    )
    from rxreact.runs.postgres import PostgresEventLog
    from rxreact.tools.approval import ApprovalDecision, Approver
    from rxreact.tools.run_context import RunContext, RunInfo
    from rxreact.tools.source import ToolSource
    from rxreact.tools.tool import Tool, tool

__version__ = "0.1.0"

__all__ = [
    "FORCED_FINAL_INSTRUCTION",
    "AgentError",
    "AgentEvent",
    "AgentResult",
    "AgentRun",
    "AnswerValidated",
    "AnthropicModel",
    "ApprovalDecision",
    "ApprovalDecisionError",
    "Approver",
    "AssistantMessage",
    "AuthenticationError",
    "BadRequestError",
    "BedrockModel",
    "CancellationToken",
    "ChatChunk",
    "ChatMemory",
    "ChatMemoryError",
    "ChatModel",
    "ChatRequest",
    "ConfigurationError",
    "ContentBlockedError",
    "ContextBudget",
    "ContextTrimmed",
    "ConversationBusyError",
    "EventLog",
    "File",
    "FinalAnswer",
    "GeminiModel",
    "GuardrailPassed",
    "GuardrailResult",
    "GuardrailStarted",
    "GuardrailTripped",
    "GuardrailTrippedError",
    "Handoff",
    "Image",
    "InMemoryChatMemory",
    "InMemoryEventLog",
    "InvalidArgumentError",
    "JudgeError",
    "LLMJudge",
    "MaxHandoffsExceededError",
    "MaxRoundsReached",
    "Message",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelResponse",
    "ModelTimeoutError",
    "NotFoundError",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "OutputPartial",
    "OutputReset",
    "OutputValidationError",
    "PostgresChatMemory",
    "PostgresEventLog",
    "ProviderStreamError",
    "RateLimitError",
    "ReactAgent",
    "ReasoningDelta",
    "RedisChatMemory",
    "RedisEventLog",
    "ResponseTooLargeError",
    "RoundFinished",
    "RoundModeDecided",
    "RoundRestarted",
    "RoundStarted",
    "RunCancelledError",
    "RunContext",
    "RunError",
    "RunInfo",
    "RunLostError",
    "RunNotFoundError",
    "RunStalledError",
    "RxReactError",
    "SQLiteChatMemory",
    "SQLiteEventLog",
    "ScriptedModel",
    "ServerError",
    "StreamInterruptedError",
    "StreamProtocolError",
    "SystemMessage",
    "Text",
    "TextDelta",
    "Tool",
    "ToolApprovalRequested",
    "ToolCall",
    "ToolCallArgsDelta",
    "ToolCallDelta",
    "ToolCallStarted",
    "ToolDefinitionError",
    "ToolErrorBudgetExceededError",
    "ToolExecutionStarted",
    "ToolMessage",
    "ToolProgress",
    "ToolResult",
    "ToolSource",
    "ToolSourceError",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "ValidationStarted",
    "Verdict",
    "__version__",
    "ensure_tool_calls_closed",
    "events_of",
    "follow",
    "from_agent",
    "model_from",
    "only_root",
    "tool",
]

_EXPORTS: dict[str, str] = {
    "FORCED_FINAL_INSTRUCTION": "rxreact.agent.react_agent",
    "AgentResult": "rxreact.agent.react_agent",
    "ReactAgent": "rxreact.agent.react_agent",
    "CancellationToken": "rxreact.cancellation",
    "GuardrailResult": "rxreact.checks.guardrails",
    "LLMJudge": "rxreact.checks.judge",
    "Verdict": "rxreact.checks.judge",
    "ContextBudget": "rxreact.context.budget",
    "AgentError": "rxreact.errors",
    "ApprovalDecisionError": "rxreact.errors",
    "AuthenticationError": "rxreact.errors",
    "BadRequestError": "rxreact.errors",
    "ChatMemoryError": "rxreact.errors",
    "ConfigurationError": "rxreact.errors",
    "ContentBlockedError": "rxreact.errors",
    "ConversationBusyError": "rxreact.errors",
    "GuardrailTrippedError": "rxreact.errors",
    "InvalidArgumentError": "rxreact.errors",
    "JudgeError": "rxreact.errors",
    "MaxHandoffsExceededError": "rxreact.errors",
    "ModelConnectionError": "rxreact.errors",
    "ModelError": "rxreact.errors",
    "ModelHTTPError": "rxreact.errors",
    "ModelTimeoutError": "rxreact.errors",
    "NotFoundError": "rxreact.errors",
    "OutputValidationError": "rxreact.errors",
    "ProviderStreamError": "rxreact.errors",
    "RateLimitError": "rxreact.errors",
    "ResponseTooLargeError": "rxreact.errors",
    "RunCancelledError": "rxreact.errors",
    "RunError": "rxreact.errors",
    "RunLostError": "rxreact.errors",
    "RunNotFoundError": "rxreact.errors",
    "RunStalledError": "rxreact.errors",
    "RxReactError": "rxreact.errors",
    "ServerError": "rxreact.errors",
    "StreamInterruptedError": "rxreact.errors",
    "StreamProtocolError": "rxreact.errors",
    "ToolDefinitionError": "rxreact.errors",
    "ToolErrorBudgetExceededError": "rxreact.errors",
    "ToolSourceError": "rxreact.errors",
    "AgentEvent": "rxreact.events",
    "AnswerValidated": "rxreact.events",
    "ContextTrimmed": "rxreact.events",
    "FinalAnswer": "rxreact.events",
    "GuardrailPassed": "rxreact.events",
    "GuardrailStarted": "rxreact.events",
    "GuardrailTripped": "rxreact.events",
    "Handoff": "rxreact.events",
    "MaxRoundsReached": "rxreact.events",
    "OutputPartial": "rxreact.events",
    "OutputReset": "rxreact.events",
    "ReasoningDelta": "rxreact.events",
    "RoundFinished": "rxreact.events",
    "RoundModeDecided": "rxreact.events",
    "RoundRestarted": "rxreact.events",
    "RoundStarted": "rxreact.events",
    "TextDelta": "rxreact.events",
    "ToolApprovalRequested": "rxreact.events",
    "ToolCallArgsDelta": "rxreact.events",
    "ToolCallStarted": "rxreact.events",
    "ToolExecutionStarted": "rxreact.events",
    "ToolProgress": "rxreact.events",
    "ToolResult": "rxreact.events",
    "ValidationStarted": "rxreact.events",
    "ensure_tool_calls_closed": "rxreact.history",
    "ChatMemory": "rxreact.memory",
    "InMemoryChatMemory": "rxreact.memory",
    "PostgresChatMemory": "rxreact.memory.postgres",
    "PostgresEventLog": "rxreact.runs.postgres",
    "RedisChatMemory": "rxreact.memory",
    "SQLiteChatMemory": "rxreact.memory",
    "AssistantMessage": "rxreact.messages",
    "ChatRequest": "rxreact.messages",
    "File": "rxreact.messages",
    "Image": "rxreact.messages",
    "Message": "rxreact.messages",
    "SystemMessage": "rxreact.messages",
    "Text": "rxreact.messages",
    "ToolCall": "rxreact.messages",
    "ToolMessage": "rxreact.messages",
    "ToolSpec": "rxreact.messages",
    "Usage": "rxreact.messages",
    "UserMessage": "rxreact.messages",
    "AnthropicModel": "rxreact.model.anthropic.client",
    "ChatModel": "rxreact.model.base",
    "BedrockModel": "rxreact.model.bedrock.client",
    "ChatChunk": "rxreact.model.chunks",
    "ModelResponse": "rxreact.model.chunks",
    "ToolCallDelta": "rxreact.model.chunks",
    "GeminiModel": "rxreact.model.gemini.client",
    "OpenAIChatModel": "rxreact.model.openai.client",
    "OpenAIResponsesModel": "rxreact.model.openai.responses",
    "ScriptedModel": "rxreact.model.scripted.model",
    "model_from": "rxreact.model.spec",
    "events_of": "rxreact.operators",
    "from_agent": "rxreact.operators",
    "only_root": "rxreact.operators",
    "AgentRun": "rxreact.runs",
    "EventLog": "rxreact.runs",
    "InMemoryEventLog": "rxreact.runs",
    "RedisEventLog": "rxreact.runs",
    "SQLiteEventLog": "rxreact.runs",
    "follow": "rxreact.runs",
    "ApprovalDecision": "rxreact.tools.approval",
    "Approver": "rxreact.tools.approval",
    "RunContext": "rxreact.tools.run_context",
    "RunInfo": "rxreact.tools.run_context",
    "ToolSource": "rxreact.tools.source",
    "Tool": "rxreact.tools.tool",
    "tool": "rxreact.tools.tool",
}
"""The module each public name is imported from, on first use."""


def __getattr__(name: str) -> _Any:
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name]), name)
    elif name in _OLD_PATHS or _importlib_util.find_spec(f"rxreact.{name}") is not None:
        # A subpackage (rxreact.runs), as the eager imports used to make one an attribute.
        value = _importlib.import_module(_OLD_PATHS.get(name, f"rxreact.{name}"))
    else:
        raise AttributeError(f"module 'rxreact' has no attribute {name!r}")
    globals()[name] = value  # found at once from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


# Module paths from before the package had rooms (``judge``, ``validation``, ``round``... right
# under ``rxreact``) name the same module objects as their new homes, imported when asked for;
# new code uses the new paths.
_OLD_PATHS: dict[str, str] = {
    "approval": "rxreact.tools.approval",
    "context_budget": "rxreact.context.budget",
    "judge": "rxreact.checks.judge",
    "round": "rxreact.agent.round",
    "run_loop": "rxreact.agent.run_loop",
    "tool_results": "rxreact.tools.results",
    "tool_source": "rxreact.tools.source",
    "validation": "rxreact.checks.validation",
}


class _OldPath(_importlib_abc.MetaPathFinder, _importlib_abc.Loader):
    """Finds ``rxreact.judge`` and the other old paths: the module at the new path."""

    def find_spec(self, fullname: str, path: _Any = None, target: _Any = None) -> _Any:
        prefix, _, old = fullname.partition(".")
        if prefix != "rxreact" or old not in _OLD_PATHS:
            return None
        return _importlib_util.spec_from_loader(fullname, self)

    def create_module(self, spec: _Any) -> _Any:
        return _importlib.import_module(_OLD_PATHS[spec.name.partition(".")[2]])

    def exec_module(self, module: _Any) -> None:
        pass  # the module at the new path ran already


if not any(isinstance(finder, _OldPath) for finder in _sys.meta_path):
    _sys.meta_path.append(_OldPath())
