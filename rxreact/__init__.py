"""rxreact: a streaming ReAct agent built as ReactiveX pipelines.

::

    from rxreact import ReactAgent, OpenAIChatModel, tool

    @tool
    def get_weather(city: str) -> str:
        \"\"\"Current weather for a city.\"\"\"
        return "sunny"

    agent = ReactAgent(model=OpenAIChatModel(), tools=[get_weather])
    agent.text("Weather in Paris?").subscribe(lambda piece: print(piece, end=""))
"""

from rxreact.agent import FORCED_FINAL_INSTRUCTION, AgentResult, ReactAgent
from rxreact.cancellation import CancellationToken
from rxreact.errors import (
    AgentError,
    AuthenticationError,
    BadRequestError,
    ChatMemoryError,
    ConfigurationError,
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelTimeoutError,
    NotFoundError,
    ProviderStreamError,
    RateLimitError,
    RunStalledError,
    RxReactError,
    ServerError,
    StreamInterruptedError,
    StreamProtocolError,
    ToolDefinitionError,
    ToolErrorBudgetExceededError,
)
from rxreact.events import (
    AgentEvent,
    FinalAnswer,
    MaxRoundsReached,
    ReasoningDelta,
    RoundFinished,
    RoundModeDecided,
    RoundStarted,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStarted,
    ToolExecutionStarted,
    ToolResult,
)
from rxreact.history import ensure_tool_calls_closed
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
from rxreact.model.scripted.model import ScriptedModel
from rxreact.tools import Tool, tool

__version__ = "0.1.0"

__all__ = [
    "FORCED_FINAL_INSTRUCTION",
    "AgentError",
    "AgentEvent",
    "AgentResult",
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
    "FinalAnswer",
    "InMemoryChatMemory",
    "MaxRoundsReached",
    "Message",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelResponse",
    "ModelTimeoutError",
    "NotFoundError",
    "OpenAIChatModel",
    "ProviderStreamError",
    "RateLimitError",
    "ReactAgent",
    "ReasoningDelta",
    "RedisChatMemory",
    "RoundFinished",
    "RoundModeDecided",
    "RoundStarted",
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
    "ToolCall",
    "ToolCallArgsDelta",
    "ToolCallDelta",
    "ToolCallStarted",
    "ToolDefinitionError",
    "ToolErrorBudgetExceededError",
    "ToolExecutionStarted",
    "ToolMessage",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "__version__",
    "ensure_tool_calls_closed",
    "tool",
]
