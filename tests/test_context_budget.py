"""ContextBudget: the fitting rules (a hypothesis property) and the agent over real HTTP."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rxreact import InMemoryChatMemory, ReactAgent, ScriptedModel, Usage, tool
from rxreact.context._token_counter import IMAGE_TOKENS
from rxreact.context.budget import CUT_MARKER, SUMMARY_PREFIX, ContextBudget
from rxreact.history import ensure_tool_calls_closed
from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    Image,
    Message,
    SystemMessage,
    Text,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from rxreact.model.openai.request_codec import encode_request
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.scheduling import ElasticScheduler
from rxreact.testing import ChaosScheduler
from rxreact.testing._api_rules import history_error

# -- the property: any history, any budget -> a valid request within budget -----------------

_text = st.text(alphabet="abc xyz", max_size=400)


@st.composite
def _turn(draw: st.DrawFn, n: int, finished: bool = True) -> list[Message]:
    """One turn: the question, tool rounds (calls then their results), maybe the answer."""
    messages: list[Message] = [UserMessage(content=draw(_text))]
    for r in range(draw(st.integers(0, 3))):
        k = draw(st.integers(1, 3))
        calls = tuple(
            ToolCall(id=f"c{n}_{r}_{i}", name="f", arguments='{"x": 1}') for i in range(k)
        )
        messages.append(AssistantMessage(content=draw(st.none() | _text), tool_calls=calls))
        messages += [ToolMessage(tool_call_id=c.id, content=draw(_text), name="f") for c in calls]
    if finished or draw(st.booleans()):
        messages.append(AssistantMessage(content=draw(_text)))
    return messages


@st.composite
def _conversation(draw: st.DrawFn) -> tuple[list[Message], list[Message]]:
    earlier = [m for n in range(draw(st.integers(0, 6))) for m in draw(_turn(n))]
    return earlier, draw(_turn(99, finished=False))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversation=_conversation(),
    max_tokens=st.integers(40, 3000),
    system=st.none() | _text,
    share=st.sampled_from([0.2, 0.5, 1.0]),
    strategy=st.sampled_from(["trim", "summarize"]),
)
def test_any_history_fits_any_budget_as_a_valid_request(
    conversation: tuple[list[Message], list[Message]],
    max_tokens: int,
    system: str | None,
    share: float,
    strategy: Any,
) -> None:
    earlier, turn = conversation
    budget = ContextBudget(
        max_tokens, reserve=max_tokens // 5, strategy=strategy, tool_result_share=share
    )
    head = [SystemMessage(content=system)] if system is not None else []
    # Only the current turn with every tool result cut to its marker must fit at all.
    smallest = [
        m.model_copy(update={"content": CUT_MARKER.format(dropped=len(m.content))})
        if isinstance(m, ToolMessage)
        else m
        for m in turn
    ]
    assume(budget.estimate([*head, *smallest]) <= budget.available)

    fitted = budget.fit(head, ensure_tool_calls_closed(earlier), turn)
    assert fitted.estimated_tokens <= budget.available
    if fitted.summarize:  # the longest summary the model may write still fits
        assert fitted.summarize == earlier[: fitted.dropped]
        summary = budget.store_summary("k", fitted.summarize, "words " * 5000)
        fitted.messages.insert(len(head), budget.summary_message(summary))
        head = [*head, fitted.messages[len(head)]]
    else:
        assert fitted.estimated_tokens == budget.estimate(fitted.messages)

    body = encode_request(ChatRequest(messages=tuple(fitted.messages)), model="m", stream=True)
    assert history_error(body) is None  # valid for the API: no call without its results
    assert budget.estimate(fitted.messages) <= budget.available
    assert fitted.messages[: len(head)] == head  # the system prompt stays
    sent_turn = fitted.messages[len(fitted.messages) - len(turn) :]
    assert [m.role for m in sent_turn] == [m.role for m in turn]  # the current turn stays
    assert sent_turn[0] == turn[0]  # its question whole
    kept = fitted.messages[len(head) : len(fitted.messages) - len(turn)]
    assert len(kept) == len(earlier) - fitted.dropped  # oldest whole groups went first
    assert [m.role for m in kept] == [m.role for m in earlier[fitted.dropped :]]
    if 0 < fitted.dropped < len(earlier):
        assert earlier[fitted.dropped].role == "user"


def test_an_oversized_tool_result_is_cut_with_a_visible_marker() -> None:
    budget = ContextBudget(1000, reserve=0, tool_result_share=0.1)
    call = ToolCall(id="c", name="f", arguments="{}")
    turn: list[Message] = [
        UserMessage(content="q"),
        AssistantMessage(tool_calls=(call,)),
        ToolMessage(tool_call_id="c", content="x" * 4000),
    ]
    fitted = budget.fit([], [], turn)
    cut = fitted.messages[-1]
    assert isinstance(cut, ToolMessage) and cut.content.startswith("xxx")
    assert cut.content.endswith(
        " characters of this tool result were cut to fit the context budget]"
    )
    assert budget.estimate([cut]) <= 100 and fitted.cut == 1 and fitted.dropped == 0


def test_the_default_counter_is_calibrated_by_the_reported_prompt_tokens() -> None:
    budget = ContextBudget(10_000)
    messages = [UserMessage(content="word " * 200)]
    before = budget.estimate(messages, key="c1")
    budget.calibrate("c1", ChatRequest(messages=tuple(messages)), prompt_tokens=2 * before)
    assert budget.estimate(messages, key="c1") == pytest.approx(2 * before, rel=0.05)
    assert budget.estimate(messages, key="other") == before  # per conversation
    own = ContextBudget(10_000, count_tokens=len)  # a counter given is trusted as is
    own.calibrate("c1", ChatRequest(messages=tuple(messages)), prompt_tokens=5)
    assert own.estimate(messages, key="c1") == 1000 + 4


def test_the_agent_calibrates_from_the_previous_request_of_the_conversation() -> None:
    memory = InMemoryChatMemory()
    _fill(memory, 2)  # ~240 tokens by the default counter: fits 400 at first
    estimate = ContextBudget(1000).estimate([*memory.load("c"), UserMessage(content="q1")])
    model = ScriptedModel(
        [text_reply("a", usage=Usage(prompt_tokens=3 * estimate)), text_reply("b")]
    )
    agent = ReactAgent(model, memory=memory, context_budget=ContextBudget(500, reserve=100))
    agent.run("q1", "c")
    agent.run("q2", "c")  # the provider counted 3x: now the oldest turns must go
    assert len(model.requests[0].messages) == 5
    assert len(model.requests[1].messages) < 7


def test_budget_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="reserve"):
        ContextBudget(100, reserve=100)
    with pytest.raises(ValueError, match="strategy"):
        ContextBudget(100, strategy="forget")  # type: ignore[arg-type]


# -- the agent over real HTTP --------------------------------------------------------------


@tool
def fetch(url: str) -> str:
    """Fetch a page."""
    return "page " * 2000


def _fill(memory: InMemoryChatMemory, turns: int) -> None:
    for n in range(turns):
        memory.append(
            "c",
            [
                UserMessage(content=f"question {n} " * 20),
                AssistantMessage(content=f"answer {n} " * 20),
            ],
        )


def _events(agent: ReactAgent, question: str) -> list[Any]:
    events: list[Any] = []
    done = threading.Event()
    agent.stream(question, "c").subscribe(events.append, lambda e: done.set(), done.set)
    assert done.wait(20)
    return events


@pytest.mark.integration
@pytest.mark.usefixtures("io_mode")
def test_the_agent_drops_the_oldest_turns_and_says_so(serve_model: Any) -> None:
    server, model = serve_model([text_reply("Fine.")])
    memory = InMemoryChatMemory()
    _fill(memory, 6)  # each turn ~110 tokens by the default counter
    budget = ContextBudget(500, reserve=100)
    agent = ReactAgent(model, memory=memory, system_prompt="Be brief.", context_budget=budget)
    events = _events(agent, "last question")

    trimmed = [e for e in events if e.type == "context_trimmed"]
    assert len(trimmed) == 1 and events.index(trimmed[0]) == 0  # before round_started
    sent = server.requests[0]["messages"]
    assert sent[0] == {"role": "system", "content": "Be brief."}
    assert sent[-1] == {"role": "user", "content": "last question"}
    assert len(sent) == 2 + 12 - trimmed[0].dropped_messages
    assert sent[1]["content"].startswith("question ")  # whole turns: a question first
    assert trimmed[0].estimated_tokens <= 400
    assert len(memory.load("c")) == 14  # memory keeps everything


@pytest.mark.integration
@pytest.mark.usefixtures("io_mode")
def test_a_huge_tool_result_is_cut_on_the_wire(serve_model: Any) -> None:
    server, model = serve_model([tool_call_reply(("fetch", {"url": "x"})), text_reply("Done.")])
    agent = ReactAgent(model, [fetch], context_budget=ContextBudget(2000))
    agent.run("read it")
    tool_message = server.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "characters of this tool result were cut" in tool_message["content"]


@pytest.mark.integration
@pytest.mark.usefixtures("io_mode")
def test_summarize_writes_one_summary_and_stores_it(serve_model: Any) -> None:
    summary_usage = Usage(prompt_tokens=50, completion_tokens=10)
    server, model = serve_model(
        [
            text_reply("Earlier: questions 0-3 were asked.", usage=summary_usage),
            text_reply(
                "One.", usage=Usage(completion_tokens=1)
            ),  # no prompt_tokens: no calibration
            text_reply("Two."),
        ]
    )
    memory = InMemoryChatMemory()
    _fill(memory, 6)
    budget = ContextBudget(600, reserve=100, strategy="summarize", summary_tokens=60)
    agent = ReactAgent(model, memory=memory, context_budget=budget)

    first = agent.run("q1", "c")
    summary_body, answer_body = server.requests[0], server.requests[1]
    assert summary_body["stream"] is False and summary_body["max_tokens"] == 60
    assert "question 0" in summary_body["messages"][-1]["content"]
    summary = answer_body["messages"][0]
    assert summary == {
        "role": "user",
        "content": SUMMARY_PREFIX + "Earlier: questions 0-3 were asked.",
    }
    assert first.usage_by_purpose["summary"] == summary_usage
    assert first.usage == summary_usage + Usage(completion_tokens=1)

    # The next run drops the same messages (its question and answer are small): no new summary.
    memory_before = len(memory.load("c"))
    trimmed = ContextBudget(600, reserve=100, strategy="summarize", summary_tokens=60)
    assert trimmed.stored_summary("c", memory.load("c")[:2]) is None  # stored per budget
    agent.run("q2", "c")
    assert len(server.requests) == 3  # one summary request in all
    assert server.requests[2]["messages"][0] == summary
    assert len(memory.load("c")) == memory_before + 2


def test_a_failed_summary_leaves_the_run_trimmed() -> None:
    from rxreact.model.scripted.replies import HTTPErrorReply

    model = ScriptedModel([HTTPErrorReply(500), text_reply("ok")])
    memory = InMemoryChatMemory()
    _fill(memory, 6)
    budget = ContextBudget(500, reserve=100, strategy="summarize", summary_tokens=50)
    result = ReactAgent(model, memory=memory, context_budget=budget).run("q", "c")
    assert result.answer == "ok"
    sent = model.requests[1].messages
    assert not any((m.content or "").startswith(SUMMARY_PREFIX) for m in sent)
    assert sent[-1] == UserMessage(content="q")


@pytest.mark.integration
@pytest.mark.usefixtures("io_mode")
def test_dropping_turns_with_tool_calls_keeps_the_wire_history_valid(serve_model: Any) -> None:
    memory = InMemoryChatMemory()
    for n in range(5):
        call = ToolCall(id=f"call_{n}", name="fetch", arguments='{"url": "x"}')
        memory.append(
            "c",
            [
                UserMessage(content=f"question {n}"),
                AssistantMessage(content="Let me look.", tool_calls=(call,)),
                ToolMessage(tool_call_id=call.id, content="page " * 60, name="fetch"),
                AssistantMessage(content=f"answer {n}"),
            ],
        )
    server, model = serve_model([text_reply("Fine.")])  # the mock answers 400 to a broken history
    budget = ContextBudget(400, reserve=100)
    events = _events(ReactAgent(model, [fetch], memory=memory, context_budget=budget), "q")
    assert events[-1].type == "final_answer"
    trimmed = events[0]
    assert trimmed.type == "context_trimmed" and trimmed.dropped_messages % 4 == 0
    sent = server.requests[0]["messages"]
    assert sent[0]["role"] == "user" and sent[0]["content"].startswith("question ")
    assert history_error(server.requests[0]) is None


def test_a_later_summary_extends_the_stored_one_in_one_request() -> None:
    memory = InMemoryChatMemory()
    _fill(memory, 4)
    budget = ContextBudget(500, reserve=100, strategy="summarize", summary_tokens=40)
    model = ScriptedModel(
        [
            text_reply("S1."),
            text_reply("A1 " * 120),  # a long answer: the next run must drop more
            text_reply("S2."),
            text_reply("A2."),
        ]
    )
    agent = ReactAgent(model, memory=memory, context_budget=budget)
    agent.run("q1 " * 60, "c")
    agent.run("q2", "c")
    first, second = model.requests[0], model.requests[2]
    assert first.options == {"max_tokens": 40} and second.options == {"max_tokens": 40}
    extended = second.messages[-1].content or ""
    assert extended.startswith(SUMMARY_PREFIX + "S1.") and "question 0" not in extended
    assert model.requests[3].messages[0] == UserMessage(content=SUMMARY_PREFIX + "S2.")


def test_many_summarizing_runs_on_a_chaotic_scheduler_all_end() -> None:
    """One budget shared by 200 concurrent conversations, each summarized before its answer."""
    scheduler = ChaosScheduler(8, preempt=0.5, max_pause=0.001, seed=3)
    tools = ElasticScheduler(8, name="chaos_summaries")
    budget = ContextBudget(500, reserve=100, strategy="summarize", summary_tokens=40)
    memory = InMemoryChatMemory()
    count = 200
    answers: list[str] = []
    lock = threading.Lock()
    ended = threading.Semaphore(0)
    models: list[ScriptedModel] = []

    def on_next(event: Any) -> None:
        if event.type == "final_answer":
            with lock:
                answers.append(event.text)

    for n in range(count):
        for turn in range(6):
            memory.append(
                f"c{n}",
                [UserMessage(content=f"q{turn} " * 60), AssistantMessage(content="a " * 100)],
            )
        model = ScriptedModel(
            [text_reply(f"summary {n}"), text_reply(f"answer {n}", interval=0.0005)]
        )
        models.append(model)
        agent = ReactAgent(
            model,
            memory=memory,
            context_budget=budget,
            scheduler=scheduler,
            tools_scheduler=tools,
            stall_timeout=None,
        )
        agent.stream("q", f"c{n}").subscribe(on_next, lambda _: ended.release(), ended.release)
    deadline = time.monotonic() + 30
    finished = 0
    while finished < count and ended.acquire(timeout=max(0.0, deadline - time.monotonic())):
        finished += 1
    assert finished == count, f"{count - finished} of {count} runs never ended"
    assert sorted(answers) == sorted(f"answer {n}" for n in range(count))
    for n, model in enumerate(models):  # each conversation got its own summary
        assert model.requests[1].messages[0].content == SUMMARY_PREFIX + f"summary {n}"


def test_images_count_a_flat_estimate_and_summaries_label_them() -> None:
    budget = ContextBudget(10_000, strategy="summarize", count_tokens=len)
    png = Image.from_bytes(b"\x89PNG", "image/png")
    plain = budget.estimate([UserMessage(content="What is this?")], ())
    with_image = budget.estimate([UserMessage(content=(Text(text="What is this?"), png))], ())
    assert with_image == plain + IMAGE_TOKENS
    dropped: list[Message] = [
        UserMessage(content=(Text(text="What is this?"), png)),
        AssistantMessage(tool_calls=(ToolCall(id="c", name="zoom", arguments="{}"),)),
        ToolMessage(tool_call_id="c", name="zoom", content=(Text(text="closer:"), png)),
        AssistantMessage(content="A dot."),
    ]
    transcript = budget.summary_request("k", dropped).messages[1].content
    assert transcript == (
        "user: What is this?\n[image: image/png, 4 bytes]\n"
        "assistant:  [calls: zoom({})]\n"
        "tool zoom: closer:\n[image: image/png, 4 bytes]\n"
        "assistant: A dot."
    )
