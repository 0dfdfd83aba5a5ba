"""Recorded runs as files: one JSON-lines file per run, written as the run ends.

::

    {"format": "rxreact.evals.run", "version": 1, "case": "paris", "repeat": 0,
     "agent": "agent", "model": "ScriptedModel(requests=2)", "virtual": true, ...}   header
    {"t": 0.0, "event": {"type": "round_started", "round": 1, "seq": 1, ...}}        an event
    ...
    {"end": {"duration": 2.5, "error": null, "result": {...}, "output_types": [...]}}  the end

A file cut short (a run killed mid-write) or written by another version loads what is whole:
the events up to the cut, the run marked ``complete=False`` with the reason as its error,
and a :class:`~rxreact.evals.errors.RecordingWarning` naming the file.
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from collections.abc import Callable
from os import PathLike
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from rxreact.evals._case import Case
from rxreact.evals._run import RecordedRun
from rxreact.evals.errors import RecordingWarning
from rxreact.events import AgentEvent, agent_event_adapter
from rxreact.messages import ContentPart, Message
from rxreact.result import AgentResult

__all__ = [
    "FORMAT",
    "VERSION",
    "read_run",
    "read_runs",
    "run_from_dict",
    "run_to_dict",
    "write_run",
]

FORMAT = "rxreact.evals.run"
VERSION = 1
"""The recording format's version: a reader warns about files of a newer one."""

_events: TypeAdapter[list[AgentEvent]] = TypeAdapter(list[AgentEvent])
_messages: TypeAdapter[list[Message]] = TypeAdapter(list[Message])
_parts: TypeAdapter[list[ContentPart | str]] = TypeAdapter(list[ContentPart | str])


def file_name(run: RecordedRun) -> str:
    """``<case>-<hash>.r<repeat>.jsonl``: readable, and distinct for distinct case names."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", run.case).strip("-.")[:60] or "case"
    digest = hashlib.sha1(run.case.encode()).hexdigest()[:8]
    return f"{slug}-{digest}.r{run.repeat}.jsonl"


def _header(run: RecordedRun) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "case": run.case,
        "repeat": run.repeat,
        "agent": run.agent,
        "model": run.model,
        "virtual": run.virtual,
        "started_at": run.started_at,
        "start": run.start,
        "case_data": None if run.source is None else case_data(run.source),
    }


def case_data(case: Case) -> dict[str, Any]:
    """What a recording keeps of its case: enough to score it again without the dataset."""
    return {
        "question": to_jsonable_python(case.question),
        "expected": to_jsonable_python(case.expected),
        "metadata": to_jsonable_python(case.metadata),
        "history": _messages.dump_python(list(case.history), mode="json"),
    }


def case_from(name: str, data: Any) -> Case | None:
    """The case a recording kept (its evaluators are not kept), ``None`` if unreadable."""
    if not isinstance(data, dict):
        return None
    try:
        question = data.get("question")
        if isinstance(question, list):
            question = _parts.validate_python(question)
        return Case(
            name,
            question,
            expected=data.get("expected"),
            metadata=data.get("metadata") or {},
            history=_messages.validate_python(data.get("history") or []),
        )
    except (ValidationError, ValueError, TypeError):
        return None


def _end(run: RecordedRun) -> dict[str, Any]:
    return {
        "duration": run.duration,
        "error": run.error,
        "result": None if run.result is None else run.result.model_dump(mode="json"),
        "output_types": list(run.output_type_names),
    }


def write_run(directory: str | PathLike[str], run: RecordedRun) -> Path:
    """Write ``run`` to its file in ``directory`` (made if missing); returns the path."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(run)
    lines = [json.dumps(_header(run)).encode()]
    for time, event in zip(run.times, run.events, strict=True):
        lines.append(
            b'{"t": '
            + repr(float(time)).encode()
            + b', "event": '
            + agent_event_adapter.dump_json(event)
            + b"}"
        )
    lines.append(json.dumps({"end": _end(run)}).encode())
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def read_runs(
    directory: str | PathLike[str], on_run: Callable[[], None] | None = None
) -> list[RecordedRun]:
    """Every recording (``*.jsonl``) in ``directory``, in file-name order; ``on_run`` is
    called after each one read."""
    folder = Path(directory)
    if not folder.is_dir():
        raise FileNotFoundError(f"no directory of recorded runs at {folder}")
    runs = []
    for path in sorted(folder.glob("*.jsonl")):
        run = read_run(path)
        if run is not None:
            runs.append(run)
            if on_run is not None:
                on_run()
    return runs


def read_run(path: str | PathLike[str]) -> RecordedRun | None:
    """The run recorded in ``path``; ``None`` (with a warning) when not even its header is
    readable."""
    path = Path(path)
    lines = path.read_bytes().split(b"\n")
    try:
        header = json.loads(lines[0])
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise ValueError("not a recorded run")
    except ValueError:
        warnings.warn(f"{path}: not a recorded run (no header); skipped", RecordingWarning, 2)
        return None
    problems = []
    if int(header.get("version", 0)) > VERSION:
        problems.append(f"written in format version {header.get('version')} (this reads {VERSION})")
    events, times, skipped = [], [], 0
    end: dict[str, Any] | None = None
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        if line.startswith(b'{"t": '):  # an event line: one validation, no json.loads first
            try:
                item = _line.validate_json(line)
                events.append(item.event)
                times.append(item.t)
                continue
            except ValidationError:
                if not _whole(line):
                    problems.append(f"cut short at line {number}")
                    break
                skipped += 1  # an event of another version: the others still tell the run
                continue
        try:
            item = json.loads(line)
        except ValueError:
            problems.append(f"cut short at line {number}")
            break
        if isinstance(item, dict) and "end" in item:
            end = item["end"]
            break
        skipped += 1
    if skipped:
        problems.append(f"{skipped} event(s) this version cannot read were left out")
    if end is None and not any(p.startswith("cut short") for p in problems):
        problems.append("its end is missing")
    if problems:
        warnings.warn(f"{path}: read in part: {'; '.join(problems)}", RecordingWarning, 2)
    return _run(header, events, times, end, str(path))


def _run(
    header: dict[str, Any],
    events: list[Any],
    times: list[float],
    end: dict[str, Any] | None,
    file: str | None,
) -> RecordedRun:
    result = None
    if end is not None and end.get("result") is not None:
        try:
            result = AgentResult.model_validate(end["result"])
        except ValidationError:
            result = None
    output_types = end.get("output_types") if end is not None else None
    return RecordedRun(
        case=str(header.get("case", "")),
        repeat=int(header.get("repeat", 0)),
        agent=str(header.get("agent", "agent")),
        model=str(header.get("model", "")),
        events=tuple(events),
        times=tuple(times),
        duration=None if end is None else end.get("duration"),
        error=(
            end.get("error")
            if end is not None
            else "the recording is cut short: the run's end is missing"
        ),
        result=result,
        virtual=bool(header.get("virtual", False)),
        started_at=float(header.get("started_at", 0.0)),
        start=float(header.get("start", 0.0)),
        complete=end is not None,
        file=file,
        output_types=tuple(output_types) if output_types is not None else None,
        source=case_from(str(header.get("case", "")), header.get("case_data")),
    )


class _Line(BaseModel):
    t: float
    event: AgentEvent


_line = TypeAdapter(_Line)


def _whole(line: bytes) -> bool:
    """Whether ``line`` is a whole JSON value (not one cut mid-write)."""
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def run_to_dict(run: RecordedRun) -> dict[str, Any]:
    """``run`` as one JSON object (what a report file holds for it)."""
    return {
        **_header(run),
        "complete": run.complete,
        "times": list(run.times),
        "events": _events.dump_python(list(run.events), mode="json"),
        "end": _end(run),
    }


def run_from_dict(data: dict[str, Any], file: str | None = None) -> RecordedRun:
    """A run from :func:`run_to_dict`'s object; events this version cannot read are left
    out (with a warning)."""
    events, times, skipped = [], [], 0
    for time, raw in zip(data.get("times", ()), data.get("events", ()), strict=False):
        try:
            events.append(agent_event_adapter.validate_python(raw))
            times.append(float(time))
        except (ValidationError, TypeError, ValueError):
            skipped += 1
    if skipped:
        warnings.warn(
            f"{file or 'report'}: case {data.get('case')!r}: {skipped} event(s) this version "
            "cannot read were left out",
            RecordingWarning,
            3,
        )
    return _run(data, events, times, data.get("end") if data.get("complete", True) else None, file)
