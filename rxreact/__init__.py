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

import sys as _sys

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

# Module paths from before the package had rooms (``judge``, ``validation``, ``round``... right
# under ``rxreact``) name the same module objects as their new homes. These are imported above
# already, so the aliases cost nothing; new code uses the new paths.
for _old, _new in (
    ("approval", "rxreact.tools.approval"),
    ("context_budget", "rxreact.context.budget"),
    ("judge", "rxreact.checks.judge"),
    ("round", "rxreact.agent.round"),
    ("run_loop", "rxreact.agent.run_loop"),
    ("tool_results", "rxreact.tools.results"),
    ("tool_source", "rxreact.tools.source"),
    ("validation", "rxreact.checks.validation"),
):
    _sys.modules.setdefault(f"rxreact.{_old}", _sys.modules[_new])
    globals()[_old] = _sys.modules[_new]  # an attribute too, as an import would make it
del _old, _new
