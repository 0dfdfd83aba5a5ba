"""The request rules of Anthropic's Messages API that the mock server enforces (HTTP 400), and
the mock's thinking signatures.

A signature is an HMAC of the thinking text under a key of the mock's own, so the server can
tell a thinking block it issued, sent back unchanged, from one edited, made up or moved from
another block; redacted thinking data carries its own HMAC the same way.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any

__all__ = ["check_messages_body", "issue_redacted", "sign_thinking"]

_KEY = b"rxreact-mock-anthropic-signing-key"
_KNOWN_KEYS = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "stream",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "metadata",
        "output_config",
        "service_tier",
        "container",
        "context_management",
        "mcp_servers",
        "inference_geo",
    }
)
_USER_BLOCKS = frozenset({"text", "image", "document", "tool_result", "search_result"})
_THINKING = ("thinking", "redacted_thinking")
_TOOL_CHOICES = frozenset({"auto", "any", "tool", "none"})


def sign_thinking(thinking: str) -> str:
    """The signature the mock gives a thinking block with this text."""
    return _mac(b"thinking:" + thinking.encode())


def issue_redacted(data: str) -> str:
    """Redacted thinking data as the mock issues it (verifiable when it comes back)."""
    return f"{data}.{_mac(b'redacted:' + data.encode())}"


def _mac(message: bytes) -> str:
    return base64.b64encode(hmac.new(_KEY, message, hashlib.sha256).digest()).decode()


def _redacted_ok(data: Any) -> bool:
    if not isinstance(data, str) or "." not in data:
        return False
    payload, _, mac = data.rpartition(".")
    return hmac.compare_digest(mac, _mac(b"redacted:" + payload.encode()))


def check_messages_body(body: dict[str, Any]) -> str | None:
    """The 400 message the real API gives for this body, if any (the first problem found)."""
    for key in body:
        if key not in _KNOWN_KEYS:
            return f"{key}: Extra inputs are not permitted"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    max_tokens = body.get("max_tokens")
    if type(max_tokens) is not int or max_tokens < 1:
        return "max_tokens: Field required (an integer >= 1)"
    thinking = body.get("thinking")
    thinking_on = isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
    problem = (
        _thinking_problem(thinking, max_tokens)
        or _tools_problem(body, thinking_on)
        or _system_problem(body.get("system"))
        or _messages_problem(body.get("messages"), thinking_on)
        or _format_problem(body.get("output_config"))
    )
    if problem:
        return problem
    marks = _count_cache_marks(body)
    if marks > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {marks}."
    return None


def _thinking_problem(thinking: Any, max_tokens: int) -> str | None:
    if thinking is None:
        return None
    if not isinstance(thinking, dict) or thinking.get("type") not in (
        "enabled",
        "adaptive",
        "disabled",
    ):
        return "thinking: Input tag does not match any of the expected tags"
    if thinking["type"] == "enabled":
        budget = thinking.get("budget_tokens")
        if type(budget) is not int or budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if budget >= max_tokens:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
    return None


def _tools_problem(body: dict[str, Any], thinking_on: bool) -> str | None:
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            return "tools: Input should be a valid list"
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                return f"tools.{i}.name: Field required"
            schema = tool.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                return f"tools.{i}.custom.input_schema.type: Input should be 'object'"
    choice = body.get("tool_choice")
    if choice is not None:
        if not isinstance(choice, dict) or choice.get("type") not in _TOOL_CHOICES:
            return "tool_choice: Input tag does not match any of the expected tags"
        if thinking_on and choice["type"] in ("any", "tool"):
            return "Thinking may not be enabled when tool_choice forces tool use."
    return None


def _system_problem(system: Any) -> str | None:
    if system is None or isinstance(system, str):
        return None
    if not isinstance(system, list) or not all(
        isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        for b in system
    ):
        return "system: Input should be a valid string or a list of text blocks"
    return None


def _messages_problem(messages: Any, thinking_on: bool) -> str | None:
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    # The current turn: from the last user message that is not only tool results.
    turn_start = 0
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if (i == 0 and role != "user") or (i > 0 and role == messages[i - 1]["role"]):
            return (
                f'messages.{i}: roles must alternate between "user" and "assistant", '
                'starting with "user"'
            )
        blocks = _blocks(message.get("content"))
        if blocks is None:
            return f"messages.{i}.content: Input should be a non-empty string or list of blocks"
        problem = _blocks_problem(i, role, blocks)
        if problem:
            return problem
        if role == "user" and any(b["type"] != "tool_result" for b in blocks):
            turn_start = i
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        blocks = _blocks(message["content"]) or []
        uses = [b.get("id") for b in blocks if b["type"] == "tool_use"]
        if uses and thinking_on and i > turn_start and blocks[0]["type"] not in _THINKING:
            return (
                f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
                f"found `{blocks[0]['type']}`. When `thinking` is enabled, an assistant message "
                "with tool use must start with a thinking block (the preceding one, unchanged)."
            )
        answers = _blocks(messages[i + 1]["content"]) or [] if i + 1 < len(messages) else []
        results = [b.get("tool_use_id") for b in answers if b["type"] == "tool_result"]
        missing = [u for u in uses if u not in results]
        if missing and i + 1 < len(messages):
            return (
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(map(str, missing))}. Each `tool_use` block must "
                "have a corresponding `tool_result` block in the next message."
            )
        if results and answers[: len(results)] != [
            b for b in answers if b["type"] == "tool_result"
        ]:
            return f"messages.{i + 1}: `tool_result` blocks must come first in the user message"
    for i, message in enumerate(messages):
        if message["role"] != "user":
            continue
        previous = _blocks(messages[i - 1]["content"]) or [] if i else []
        offered = {b.get("id") for b in previous if b["type"] == "tool_use"}
        for j, block in enumerate(_blocks(message["content"]) or []):
            if block["type"] == "tool_result" and block.get("tool_use_id") not in offered:
                return (
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` "
                    f"blocks: {block.get('tool_use_id')}. Each `tool_result` block must have a "
                    "corresponding `tool_use` block in the previous message."
                )
    return None


def _blocks(content: Any) -> list[dict[str, Any]] | None:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else None
    if not isinstance(content, list) or not content:
        return None
    if not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in content):
        return None
    return content


def _blocks_problem(i: int, role: str, blocks: list[dict[str, Any]]) -> str | None:
    for j, block in enumerate(blocks):
        kind = block["type"]
        where = f"messages.{i}.content.{j}"
        if role == "user" and kind not in _USER_BLOCKS:
            return f"{where}.type: `{kind}` blocks are not allowed in user messages"
        if role == "assistant" and kind in ("tool_result", "image", "document"):
            return f"{where}.type: `{kind}` blocks are not allowed in assistant messages"
        if kind == "text" and not (isinstance(block.get("text"), str) and block["text"]):
            return f"{where}: text content blocks must be non-empty"
        if kind == "tool_use" and not isinstance(block.get("input"), dict):
            return f"{where}.tool_use.input: Input should be a valid dictionary"
        if kind == "thinking" and not (
            isinstance(block.get("thinking"), str)
            and hmac.compare_digest(str(block.get("signature")), sign_thinking(block["thinking"]))
        ):
            return f"{where}: Invalid `signature` in `thinking` block"
        if kind == "redacted_thinking" and not _redacted_ok(block.get("data")):
            return f"{where}: Invalid `data` in `redacted_thinking` block"
        if kind == "image" and not _source_ok(block.get("source"), image=True):
            return f"{where}.image.source: Input tag does not match any of the expected tags"
        if kind == "document" and not _source_ok(block.get("source"), image=False):
            return f"{where}.document.source: Input tag does not match any of the expected tags"
    return None


def _source_ok(source: Any, *, image: bool) -> bool:
    if not isinstance(source, dict):
        return False
    kind = source.get("type")
    if kind == "url":
        return isinstance(source.get("url"), str)
    if kind == "base64":
        media = source.get("media_type")
        allowed = (
            media in ("image/jpeg", "image/png", "image/gif", "image/webp")
            if image
            else (media == "application/pdf")
        )
        return allowed and isinstance(source.get("data"), str)
    return not image and kind == "text" and isinstance(source.get("data"), str)


def _format_problem(config: Any) -> str | None:
    if config is None:
        return None
    fmt = config.get("format") if isinstance(config, dict) else None
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return "output_config.format.type: Input should be 'json_schema'"
    open_object = _open_object(fmt.get("schema"))
    if open_object:
        return (
            "output_config.format.schema: For 'object' type, 'additionalProperties' must be "
            f"explicitly set to false ({open_object})"
        )
    return None


def _open_object(node: Any, where: str = "schema") -> str | None:
    if isinstance(node, dict):
        if node.get("type") == "object" and node.get("additionalProperties") is not False:
            return where
        for key, value in node.items():
            found = _open_object(value, f"{where}.{key}")
            if found:
                return found
    elif isinstance(node, list):
        for n, value in enumerate(node):
            found = _open_object(value, f"{where}.{n}")
            if found:
                return found
    return None


def _count_cache_marks(body: dict[str, Any]) -> int:
    def count(node: Any) -> int:
        if isinstance(node, dict):
            return ("cache_control" in node) + sum(count(v) for v in node.values())
        if isinstance(node, list):
            return sum(count(v) for v in node)
        return 0

    return count(body.get("system")) + count(body.get("tools")) + count(body.get("messages"))
