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

from rxreact.agent import FORCED_FINAL_INSTRUCTION, AgentResult, ReactAgent
from rxreact.approval import ApprovalDecision, Approver
from rxreact.cancellation import CancellationToken
from rxreact.context_budget import ContextBudget
from rxreact.errors import (
    AgentError,
    AuthenticationError,
    BadRequestError,
    ChatMemoryError,
    ConfigurationError,
    ConversationBusyError,
    InvalidArgumentError,
    JudgeError,
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelTimeoutError,
    NotFoundError,
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
    MaxRoundsReached,
    ReasoningDelta,
    RoundFinished,
    RoundModeDecided,
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
from rxreact.judge import LLMJudge, Verdict
from rxreact.memory import ChatMemory, InMemoryChatMemory, RedisChatMemory, SQLiteChatMemory
from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from rxreact.model.base import ChatModel
from rxreact.model.chunks import ChatChunk, ModelResponse, ToolCallDelta
from rxreact.model.openai.client import OpenAIChatModel
from rxreact.model.openai.responses import OpenAIResponsesModel
from rxreact.model.scripted.model import ScriptedModel
from rxreact.operators import events_of
from rxreact.runs import AgentRun, EventLog, InMemoryEventLog, RedisEventLog, follow
from rxreact.tool_source import ToolSource
from rxreact.tools import Tool, tool

__version__ = "0.1.0"

__all__ = [
    "FORCED_FINAL_INSTRUCTION",
    "AgentError",
    "AgentEvent",
    "AgentResult",
    "AgentRun",
    "AnswerValidated",
    "ApprovalDecision",
    "Approver",
    "AssistantMessage",
    "AuthenticationError",
    "BadRequestError",
    "CancellationToken",
    "ChatChunk",
    "ChatMemory",
    "ChatMemoryError",
    "ChatModel",
    "ChatRequest",
    "ConfigurationError",
    "ContextBudget",
    "ContextTrimmed",
    "ConversationBusyError",
    "EventLog",
    "FinalAnswer",
    "InMemoryChatMemory",
    "InMemoryEventLog",
    "InvalidArgumentError",
    "JudgeError",
    "LLMJudge",
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
    "ProviderStreamError",
    "RateLimitError",
    "ReactAgent",
    "ReasoningDelta",
    "RedisChatMemory",
    "RedisEventLog",
    "ResponseTooLargeError",
    "RoundFinished",
    "RoundModeDecided",
    "RoundStarted",
    "RunCancelledError",
    "RunError",
    "RunLostError",
    "RunNotFoundError",
    "RunStalledError",
    "RxReactError",
    "SQLiteChatMemory",
    "ScriptedModel",
    "ServerError",
    "StreamInterruptedError",
    "StreamProtocolError",
    "SystemMessage",
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
    "tool",
]
