"""The no-key demo: the first seed's weather question, answered over real HTTP by a loopback
mock model, with mock tools that take a little time.

The mock "model" is a function of the request, like a real one: it calls the four tools when the
report question arrives, then writes its report from the tool results it finds in the history,
and answers the follow-up from the conversation memory; other questions it answers from the
question, as the weather desk does. Nothing is pre-written as a finished
answer and cut up: the text depends on what the tools returned.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rxreact.cancellation import CancellationToken
from rxreact.messages import ChatRequest, ToolMessage, UserMessage, content_text
from rxreact.model.scripted.replies import Reply, text_reply, tool_call_reply
from rxreact.testing.weather_desk import weather_desk
from rxreact.tools.tool import Tool, tool

__all__ = ["FOLLOW_UP", "QUESTION", "demo_model_script", "demo_tools"]

QUESTION = (
    "Using today's weather in Beijing, the 7-day trend for Beijing, today's weather in "
    "Shanghai, and any Beijing weather warnings, write a short weather report."
)
FOLLOW_UP = "Which of the two cities is warmer today, and by how much?"

_TODAY = {
    "Beijing": ("sunny", 12, "north-east wind, force 3"),
    "Shanghai": ("light rain", 17, "east wind, force 2"),
}
_TREND = [("Mon", 12), ("Tue", 10), ("Wed", 7), ("Thu", 5), ("Fri", 6), ("Sat", 8), ("Sun", 9)]
_TOOL_LATENCY_S = {"get_weather": 0.35, "get_forecast": 0.6, "search_warnings": 0.45}


def demo_tools(latency_scale: float = 1.0) -> list[Tool[..., Any]]:
    """The demo's mock tools; each waits a little (cancellably) as a real API would."""

    def pause(name: str, token: CancellationToken) -> None:
        token.wait(_TOOL_LATENCY_S[name] * latency_scale)

    @tool
    def get_weather(city: str, token: CancellationToken) -> str:
        """Today's weather for a city: conditions, temperature in °C and wind."""
        pause("get_weather", token)
        if city not in _TODAY:
            return f"No weather data for {city}."
        sky, temp, wind = _TODAY[city]
        return f"{city} today: {sky}, {temp}°C, {wind}."

    @tool
    def get_forecast(city: str, token: CancellationToken, days: int = 7) -> str:
        """Daily high temperatures in °C for the coming days."""
        pause("get_forecast", token)
        if city != "Beijing":
            return f"No forecast for {city}."
        return ", ".join(f"{d} {t}°C" for d, t in _TREND[:days])

    @tool
    def search_warnings(city: str, token: CancellationToken) -> str:
        """Active weather warnings for a city."""
        pause("search_warnings", token)
        if city == "Beijing":
            return "Blue cold-wave warning: temperatures drop 6-8°C from Tuesday to Thursday."
        return f"No active warnings for {city}."

    return [get_weather, get_forecast, search_warnings]


def demo_model_script(request: ChatRequest, *, interval: float = 0.012) -> Reply:
    """The mock model's reply to ``request`` (a function of the whole history).

    The seeded weather report question calls the four tools and writes the report from
    their results, the follow-up compares the two cities from the conversation; any other
    question is answered from itself, as :func:`rxreact.testing.weather_desk` does ("What is
    2+2?" gets no Beijing report, "Weather in Paris?" calls ``get_weather`` for Paris).
    """
    messages = request.messages
    last = messages[-1]
    if isinstance(last, ToolMessage):
        results = [content_text(m.content) for m in _turn(messages) if isinstance(m, ToolMessage)]
        if any(r.startswith("Mon ") for r in results):  # the report's tools answered
            return text_reply(
                _report(results),
                reasoning="The tools answered; writing the report.",
                interval=interval,
            )
        return weather_desk(request, interval=interval)
    question = content_text(last.content) if isinstance(last, UserMessage) else ""
    if _asks_for_report(question):
        return tool_call_reply(
            ("get_weather", {"city": "Beijing"}),
            ("get_forecast", {"city": "Beijing", "days": 7}),
            ("get_weather", {"city": "Shanghai"}),
            ("search_warnings", {"city": "Beijing"}),
            text="Let me gather the data first. ",
            interval=interval,
        )
    if _asks_to_compare(question):
        results = [content_text(m.content) for m in messages if isinstance(m, ToolMessage)]
        return text_reply(_compare(results), interval=interval)
    return weather_desk(request, interval=interval)


def _asks_for_report(question: str) -> bool:
    """A weather report of the demo's cities (the seeded question, or one like it)."""
    return "report" in question.lower() and any(city in question for city in _TODAY)


def _asks_to_compare(question: str) -> bool:
    words = set(re.findall(r"[a-z]+", question.lower()))
    return bool(words & {"warmer", "colder", "hotter", "cooler", "compare"})


def _turn(messages: Sequence[Any]) -> list[Any]:
    """The messages since the last question."""
    questions = [i for i, m in enumerate(messages) if isinstance(m, UserMessage)]
    return list(messages[questions[-1] :]) if questions else list(messages)


def _report(results: list[str]) -> str:
    today = [r for r in results if " today: " in r]
    trend = next((r for r in results if r.startswith("Mon")), "no forecast")
    warning = next((r for r in results if "warning" in r.lower()), "none")
    return (
        "Weather report. " + " ".join(today) + f" Over the next seven days Beijing goes {trend}: "
        "a cold spell mid-week, recovering by the weekend. "
        f"Warnings: {warning} Pack a warm coat for Beijing and an umbrella for Shanghai."
    )


def _compare(results: list[str]) -> str:
    temps = {}
    for result in results:
        match = re.match(r"(\w+) today: [^,]+, (-?\d+)°C", result)
        if match:
            temps[match.group(1)] = int(match.group(2))
    if len(temps) < 2:
        return "I don't have today's temperatures for both cities in this conversation."
    (warm, t1), (cold, t2) = sorted(temps.items(), key=lambda kv: -kv[1])[:2]
    return (
        f"From the report earlier: {warm} is warmer today, {t1}°C against {t2}°C "
        f"in {cold}, {t1 - t2}°C warmer."
    )
