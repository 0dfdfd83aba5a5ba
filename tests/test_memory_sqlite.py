"""SQLiteChatMemory beyond the contract: persistence, schema, corruption, two connections."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from rxreact import ChatMemoryError, ConversationBusyError, ReactAgent
from rxreact.memory import SQLiteChatMemory
from rxreact.memory.sqlite import SCHEMA_VERSION
from rxreact.messages import AssistantMessage, Image, ReplayItem, Text, UserMessage
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import text_reply


def qa(tag: str) -> list[UserMessage | AssistantMessage]:
    return [UserMessage(content=f"{tag}?"), AssistantMessage(content=f"{tag}.")]


def test_history_survives_reopening_the_file(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    with SQLiteChatMemory(path) as memory:
        memory.append("c", qa("one"))
    with SQLiteChatMemory(path, max_turns=2) as memory:
        assert memory.load("c") == qa("one")
        memory.append("c", qa("two"))
        memory.append("c", qa("three"))
    with SQLiteChatMemory(str(path)) as memory:
        assert memory.load("c") == [*qa("two"), *qa("three")]
        assert memory.conversation_ids() == ["c"]


def test_the_file_is_marked_versioned_and_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    SQLiteChatMemory(path).close()
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        db.close()


def test_a_corrupt_row_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    with SQLiteChatMemory(path) as memory:
        memory.append("c", qa("one"))
        memory.append("c", qa("two"))
    db = sqlite3.connect(path)
    with db:
        db.execute('UPDATE turns SET messages = \'[{"role": "robot"}]\' WHERE seq = 2')
    db.close()
    with (
        SQLiteChatMemory(path) as memory,
        pytest.raises(ChatMemoryError, match=r"turn 2 .*corrupt"),
    ):
        memory.load("c")


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"not a database, just some notes\n" * 100)
    with pytest.raises(ChatMemoryError, match=r"notes\.txt") as caught:
        SQLiteChatMemory(path)
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)
    assert path.read_bytes().startswith(b"not a database")  # left as it was


def test_someone_elses_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE invoices (id INTEGER)")
    db.close()
    with pytest.raises(ChatMemoryError, match="not an rxreact chat memory"):
        SQLiteChatMemory(path)


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    SQLiteChatMemory(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(ChatMemoryError, match="newer"):
        SQLiteChatMemory(path)


def test_a_closed_memory_raises_chat_memory_errors(tmp_path: Path) -> None:
    memory = SQLiteChatMemory(tmp_path / "chat.db")
    memory.close()
    memory.close()  # idempotent
    with pytest.raises(ChatMemoryError):
        memory.load("c")
    with pytest.raises(ChatMemoryError):
        memory.append("c", qa("one"))


def test_an_empty_turn_stores_nothing(tmp_path: Path) -> None:
    with SQLiteChatMemory(tmp_path / "chat.db", max_turns=1) as memory:
        memory.append("c", qa("one"))
        memory.append("c", [])
        assert memory.load("c") == qa("one")


def test_two_connections_to_one_file_append_whole_turns(tmp_path: Path) -> None:
    """Two memories on one file stand for two processes: each turn lands whole, none is lost."""
    path = tmp_path / "chat.db"
    memories = [SQLiteChatMemory(path), SQLiteChatMemory(path)]
    start = threading.Barrier(len(memories))

    def write(m: int) -> None:
        start.wait(timeout=10)
        for i in range(20):
            memories[m].append("c", qa(f"m{m}-{i}"))

    threads = [threading.Thread(target=write, args=(m,)) for m in range(len(memories))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    history = memories[0].load("c")
    for memory in memories:
        memory.close()
    assert len(history) == 80
    for question, answer in zip(history[::2], history[1::2], strict=True):
        assert [question, answer] == qa(question.content.removesuffix("?"))


def test_an_agent_remembers_across_runs_and_reopened_files(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    model = ScriptedModel([text_reply("Nice to meet you, Ada."), text_reply("You are Ada.")])
    with SQLiteChatMemory(path) as memory:
        assert ReactAgent(model, memory=memory).call("I am Ada.", "c1") == "Nice to meet you, Ada."
    with SQLiteChatMemory(path) as memory:  # a restart: a new memory on the same file
        assert ReactAgent(model, memory=memory).call("Who am I?", "c1") == "You are Ada."
        stored = memory.load("c1")
    second = model.requests[1].messages
    assert [(m.role, m.content) for m in second] == [
        ("user", "I am Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "Who am I?"),
    ]
    assert [m.content for m in stored] == [m.content for m in second] + ["You are Ada."]


def test_a_version_1_file_is_migrated_and_keeps_its_turns(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    db = sqlite3.connect(path)
    with db:  # the schema rxreact wrote before leases existed
        db.execute("PRAGMA application_id = 0x7278524D")
        db.execute("PRAGMA user_version = 1")
        db.execute(
            "CREATE TABLE turns (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            "conversation_id TEXT NOT NULL, messages TEXT NOT NULL)"
        )
        db.execute("CREATE INDEX turns_by_conversation ON turns (conversation_id, seq)")
        db.execute(
            "INSERT INTO turns (conversation_id, messages) VALUES ('c', ?)",
            ('[{"role": "user", "content": "old?"}, {"role": "assistant", "content": "old."}]',),
        )
    db.close()
    with SQLiteChatMemory(path) as memory:
        assert memory.load("c") == qa("old")
        lease = memory.try_acquire("c", "run", 30)
        assert lease is not None and lease.token == 1
        memory.append("c", qa("new"), lease=lease)
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
    finally:
        db.close()
    with SQLiteChatMemory(path) as memory:  # reopening a migrated file changes nothing
        assert memory.load("c") == [*qa("old"), *qa("new")]
        assert memory.try_acquire("c", "other", 30) is None


def test_a_version_2_file_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    db = sqlite3.connect(path)
    with db:  # the schema and rows rxreact wrote before messages had parts and replay items
        db.execute("PRAGMA application_id = 0x7278524D")
        db.execute("PRAGMA user_version = 2")
        db.execute(
            "CREATE TABLE turns (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            "conversation_id TEXT NOT NULL, messages TEXT NOT NULL)"
        )
        db.execute("CREATE INDEX turns_by_conversation ON turns (conversation_id, seq)")
        db.execute(
            "CREATE TABLE leases (conversation_id TEXT PRIMARY KEY, owner TEXT, "
            "token INTEGER NOT NULL, expires_at REAL NOT NULL)"
        )
        old_turn = (
            '[{"role":"user","content":"weather?"},'
            '{"role":"assistant","content":null,"tool_calls":[{"id":"c1","name":"w",'
            '"arguments":"{}"}],"reasoning":null},'
            '{"role":"tool","tool_call_id":"c1","content":"sunny","name":"w"},'
            '{"role":"assistant","content":"Sunny.","tool_calls":[],"reasoning":"easy"}]'
        )
        db.execute("INSERT INTO turns (conversation_id, messages) VALUES ('c', ?)", (old_turn,))
        db.execute("INSERT INTO turns (conversation_id, messages) VALUES ('d', ?)", (old_turn,))
        db.execute("INSERT INTO leases VALUES ('c', NULL, 7, 0)")  # a released lease's token
    db.close()
    image = Image.from_bytes(b"\x89PNG", "image/png")
    replay = ReplayItem(provider="openai-responses", data={"type": "reasoning", "id": "rs_1"})
    new_turn = [
        UserMessage(content=(Text(text="and this?"), image)),
        AssistantMessage(content="A dot.", replay=(replay,)),
    ]
    with SQLiteChatMemory(path) as memory:
        old = memory.load("c")
        assert [m.role for m in old] == ["user", "assistant", "tool", "assistant"]
        assert old[3] == AssistantMessage(content="Sunny.", reasoning="easy")
        assert memory.load("d") == old
        lease = memory.try_acquire("c", "run", 30)
        assert lease is not None and lease.token == 8  # the lease row was kept too
        memory.append("c", new_turn, lease=lease)
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
        assert db.execute("SELECT count(*) FROM turns").fetchone()[0] == 3
    finally:
        db.close()
    with SQLiteChatMemory(path) as memory:
        assert memory.load("c") == [*old, *new_turn]


def test_leases_are_shared_by_two_connections_to_one_file(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    with SQLiteChatMemory(path) as one, SQLiteChatMemory(path) as two:
        lease = one.try_acquire("c", "run-1", 30)
        assert lease is not None
        assert two.try_acquire("c", "run-2", 30) is None
        one.release(lease)
        taken = two.try_acquire("c", "run-2", 30)
        assert taken is not None and taken.token == 2
        with pytest.raises(ConversationBusyError):
            one.append("c", qa("late"), lease=lease)
        assert two.load("c") == []
