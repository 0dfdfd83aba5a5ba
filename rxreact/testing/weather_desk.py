"""A mock model that behaves like a small weather desk: it reads each request and decides.

It is the model behind ``rxreact mock --weather`` and behind the tests that run the README's
examples, so those examples run as written against a loopback server with no key::

    from rxreact import OpenAIChatModel, ReactAgent, tool
    from rxreact.testing import MockOpenAIServer, weather_desk

    @tool
    def get_weather(city: str) -> str:
        "Current weather for a city."
        return f"{city}: sunny, 21°C"

    with (
        MockOpenAIServer(weather_desk) as server,
        OpenAIChatModel("mock", base_url=server.base_url) as model,
    ):
        answer = ReactAgent(model, [get_weather]).call("Weather in Paris?")
    assert answer == "Here is what I found: Paris: sunny, 21°C."

What it does with a request, in this order:

- **Tool results** end the history (or the user message that carries their images does): it
  answers from them ("Here is what I found: ..."), or, when the request asks for a JSON schema
  (``output_type=``), with a JSON object of that schema filled from the city and the results
  (numbers from the first number in them).
- **A judge's request** (``response_format`` ``json_object``): ``{"passed": true}``.
- **A question naming a city** ("... in Paris?", or a JSON object with a ``city`` field, as
  an agent used as a tool with ``input_type=`` is asked), or a follow-up question when an
  earlier one named a city ("And tomorrow?"): a call of the offered tool whose name and
  description share the most words with the question, among those whose required arguments
  are strings it can fill with the city; with none of those, a handoff (``transfer_to_...``)
  chosen the same way, once a turn. After a handoff the agent it went to decides anew.
- Thanks get "You are welcome."; anything else, or tools withheld (``tool_choice: "none"``),
  a short answer.

Every reply reports its usage as a real model does: a token per word or punctuation mark, of
the whole request and of what the reply says.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    ToolMessage,
    ToolSpec,
    Usage,
    UserMessage,
    content_text,
)
from rxreact.model.scripted.replies import Reply, text_reply, tool_call_reply

__all__ = ["weather_desk"]

_CITY = re.compile(r"\b(?:in|for|at) ([A-Z][\w-]+(?: [A-Z][\w-]+)?)")
_WORD = re.compile(r"[a-z]+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_CITY_ARGUMENTS = ("city", "location", "place", "town")
_HANDOFF = "transfer_to_"  # rxreact.agent.handoffs.HANDOFF_PREFIX, not imported: a mock stays apart


def weather_desk(request: ChatRequest, *, interval: float = 0.0) -> Reply:
    """The desk's reply to ``request`` (see the module doc).

    Args:
        request: the decoded request.
        interval: seconds between streamed pieces (0: all at once).
    """
    *earlier, last = request.messages
    prompt = _tokens(" ".join(_text_of(m) for m in request.messages))

    def answer(text: str, **options: Any) -> Reply:
        return text_reply(text, interval=interval, usage=_usage(prompt, text), **options)

    response_format = request.options.get("response_format") or {}
    handed_off = _handed_off(request)
    results = _results_of_turn(request)
    if (isinstance(last, ToolMessage) and results) or _images_of_results(last, earlier):
        if response_format.get("type") == "json_schema":
            schema = response_format.get("json_schema", {}).get("schema", {})
            return answer(json.dumps(_fill(schema, _city_of_turn(request), results)), pieces=4)
        return answer(f"Here is what I found: {'; '.join(results).rstrip('.')}.")
    if response_format.get("type") == "json_object":
        return answer('{"passed": true, "feedback": ""}')
    if handed_off:  # the agent the turn went to decides on its question anew
        question = _question_of_turn(request)
    else:
        question = content_text(last.content) if isinstance(last, UserMessage) else ""
    city = _city(question) or (_earlier_city(request) if question.endswith("?") else None)
    if city and request.tool_choice != "none":
        chosen = _choose_tool(request.tools, question)
        call = None if chosen is None else (chosen.name, _arguments(chosen, city))
        if call is None and not handed_off:
            handoff = _choose_tool(request.tools, question, handoffs=True)
            call = None if handoff is None else (handoff.name, {})
        if call is not None:
            usage = _usage(prompt, f"{call[0]} {json.dumps(call[1])}")
            return tool_call_reply(call, interval=interval, usage=usage)
    if city:
        return answer(f"I have no way to look up the weather in {city}.")
    if "thank" in question.lower():
        return answer("You are welcome.")
    return answer("Glad to help. Ask me about the weather anywhere.")


def _text_of(message: Any) -> str:
    content = getattr(message, "content", None)
    return content_text(content) if content else ""


_TOKEN = re.compile(r"\w+|[^\w\s]")


def _tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def _usage(prompt: int, said: str) -> Usage:
    completion = _tokens(said)
    return Usage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
    )


def _images_of_results(last: Any, earlier: list[Any]) -> bool:
    """The user message that carries a round's tool-result images, right after its results."""
    return isinstance(last, UserMessage) and bool(earlier) and isinstance(earlier[-1], ToolMessage)


def _city(text: str) -> str | None:
    match = _CITY.search(text)
    if match:
        return match[1]
    if text.startswith("{"):  # an agent used as a tool with an input_type reads JSON
        try:
            fields = json.loads(text)
        except ValueError:
            return None
        if isinstance(fields, dict):
            found = [v for k, v in fields.items() if k in _CITY_ARGUMENTS and isinstance(v, str)]
            return found[0] if found else None
    return None


def _earlier_city(request: ChatRequest) -> str | None:
    """The city of the latest earlier question that named one (the conversation's topic)."""
    for message in reversed(request.messages[:-1]):
        if isinstance(message, UserMessage):
            city = _city(content_text(message.content))
            if city:
                return city
    return None


def _turn(request: ChatRequest) -> list[Any]:
    """The messages of the current turn: from the last question on (a user message that does
    not carry tool-result images)."""
    messages = list(request.messages)
    starts = [
        i
        for i, m in enumerate(messages)
        if isinstance(m, UserMessage) and not _images_of_results(m, messages[:i])
    ]
    return messages[starts[-1] :] if starts else messages


def _results_with_names(request: ChatRequest) -> list[tuple[str, str]]:
    """The turn's tool results with the names of their calls (ids are matched within their
    round: a provider may number each round's calls from zero again)."""
    names: dict[str, str] = {}
    results: list[tuple[str, str]] = []
    for message in _turn(request):
        if isinstance(message, AssistantMessage):
            names = {call.id: call.name for call in message.tool_calls or ()}
        elif isinstance(message, ToolMessage):
            results.append((names.get(message.tool_call_id, ""), content_text(message.content)))
    return results


def _results_of_turn(request: ChatRequest) -> list[str]:
    """The turn's tool results, a handoff's own result left out (it says nothing found)."""
    return [text for name, text in _results_with_names(request) if not name.startswith(_HANDOFF)]


def _handed_off(request: ChatRequest) -> bool:
    """The turn was handed to another agent already (which then decides for itself)."""
    return any(
        call.name.startswith(_HANDOFF)
        for message in _turn(request)
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls or ()
    )


def _question_of_turn(request: ChatRequest) -> str:
    questions = [m for m in _turn(request) if isinstance(m, UserMessage)]
    return content_text(questions[0].content) if questions else ""


def _city_of_turn(request: ChatRequest) -> str:
    """The city the turn's tool calls were made with (else the question's)."""
    for message in _turn(request):
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls or ():
                try:
                    arguments = json.loads(call.arguments)
                except ValueError:
                    continue
                if not isinstance(arguments, dict):
                    continue
                for name in _CITY_ARGUMENTS:
                    if isinstance(arguments.get(name), str):
                        return str(arguments[name])
    questions = [m for m in _turn(request) if isinstance(m, UserMessage)]
    return (_city(content_text(questions[0].content)) if questions else None) or ""


def _fillable(spec: ToolSpec) -> bool:
    """Every required argument is a string the desk can fill with a city."""
    properties = spec.parameters.get("properties", {})
    required = spec.parameters.get("required", [])
    return bool(required) and all(
        properties.get(name, {}).get("type") == "string" for name in required
    )


def _choose_tool(
    tools: tuple[ToolSpec, ...], question: str, *, handoffs: bool = False
) -> ToolSpec | None:
    """The fillable tool (or with ``handoffs``, the handoff) sharing the most words with the
    question (the first one on a tie)."""
    words = set(_WORD.findall(question.lower()))
    best: ToolSpec | None = None
    best_score = -1
    for spec in tools:
        if spec.name.startswith(_HANDOFF) != handoffs or not (handoffs or _fillable(spec)):
            continue
        score = len(words & set(_WORD.findall(f"{spec.name} {spec.description}".lower())))
        if score > best_score:
            best, best_score = spec, score
    return best


def _arguments(spec: ToolSpec, city: str) -> dict[str, Any]:
    required = spec.parameters.get("required", [])
    named = [name for name in required if name in _CITY_ARGUMENTS]
    return {name: city for name in (named or required)}


def _fill(schema: dict[str, Any], city: str, results: list[str]) -> dict[str, Any]:
    """A JSON object for ``schema``: city-like strings get the city, other strings the
    results, numbers the first number in the results, booleans ``true``."""
    text = "; ".join(results)
    number = _NUMBER.search(text)
    value: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        kind = prop.get("type")
        if kind == "string":
            value[name] = city if name in _CITY_ARGUMENTS else text
        elif kind in ("number", "integer"):
            found = float(number[0]) if number else 0.0
            value[name] = int(found) if kind == "integer" else found
        elif kind == "boolean":
            value[name] = True
    return value
