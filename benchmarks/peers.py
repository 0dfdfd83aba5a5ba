"""Workload 6: the peer frameworks, through the shared peer harness when they are installed.

The harness (``shared/bench/run_all.sh``: its own mock, its peers, its table) runs unchanged
with the peers' venv (``PEERS_VENV``, default ``~/.cache/rxreact-peers-venv``), for the peers
whose packages import there. Its rows are shown with their ratio to the harness's own
``raw_httpx`` (the same floor as ours, in the same run) and rxreact's ratio to our floor
(workload 1) beside them. Without the venv, the harness's reference table (another machine)
is printed, marked as such: compare ratios, not microseconds, across machines.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._harness import ROOT, Table

PEER_IMPORTS = {
    "raw_httpx": "httpx",
    "openai_sdk": "openai",
    "openai_sdk_state": "openai",
    "langgraph": "langgraph, langchain_openai",
    "pydantic_ai": "pydantic_ai",
    "openai_agents": "agents",
}
REFERENCE = [
    # peer, version, cpu us/chunk, x raw, fixed cpu ms (N=10), ttft ms (N=10), tools
    ("raw_httpx", "httpx 0.28.1", 45, 1.0, 8.0, 7.3, "parallel, 0.50 s"),
    ("openai_sdk", "openai 3.57.0", 276, 6.2, 17.5, 13.8, "parallel, 0.50 s"),
    ("openai_sdk_state", "openai 3.57.0", 520, 11.6, 29.4, 23.4, "parallel, 0.50 s"),
    ("langgraph", "1.2.24", 569, 12.7, 41.6, 34.1, "parallel, 0.50 s"),
    ("pydantic_ai", "pydantic-ai-slim 2.68.0", 573, 12.8, 42.0, 32.8, "parallel, 0.50 s"),
    ("openai_agents", "openai-agents 0.24.0", 339, 7.6, 33.5, 30.8, "parallel, 0.50 s"),
]
"""``shared/bench/README.md``'s reference numbers (2-core dev machine, 8 x 20 sessions)."""


def harness_dir() -> Path:
    return Path(os.environ.get("RXREACT_PEER_BENCH", ROOT.parent / "shared" / "bench"))


def peers_python() -> Path:
    venv = os.environ.get("PEERS_VENV", str(Path.home() / ".cache" / "rxreact-peers-venv"))
    return Path(venv) / "bin" / "python"


def installed_peers() -> list[str]:
    """The peers whose packages import in the peers' venv (none without the venv)."""
    python = peers_python()
    if not python.exists() or not (harness_dir() / "run_all.sh").exists():
        return []
    found = []
    for peer, modules in PEER_IMPORTS.items():
        probe = subprocess.run(
            [str(python), "-c", f"import {modules}"], capture_output=True, timeout=120, check=False
        )
        if probe.returncode == 0:
            found.append(peer)
    return found


def _load(path: Path) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                rows.setdefault(row["peer"], []).append(row)
    return rows


def _median(rows: list[dict[str, Any]], key: str) -> float:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else float("nan")


def run(quick: bool, rxreact_ratio: float | None, peers: list[str] | None = None) -> Table:
    """Run the harness for ``peers`` (default: the installed ones), or print the reference."""
    peers = installed_peers() if peers is None else peers
    if "raw_httpx" not in peers and peers:
        peers = ["raw_httpx", *peers]
    ours = "n/a" if rxreact_ratio is None else f"{rxreact_ratio:.2f}"
    if not peers:
        return _reference(ours)
    repeats, sessions = ("1", "5") if quick else ("1", "10")
    with tempfile.TemporaryDirectory(prefix="rxreact-peers-") as out:
        env = {
            **os.environ,
            "PY": str(peers_python()),
            "PEERS": " ".join(peers),
            "REPEATS": repeats,
            "SESSIONS": sessions,
            "OUT": out,
        }
        subprocess.run(
            ["bash", "run_all.sh"],
            cwd=harness_dir(),
            env=env,
            capture_output=True,
            timeout=1800,
            check=False,
        )
        main, fixed, tools = (_load(Path(out) / f"{m}.jsonl") for m in ("main", "fixed", "tools"))
    table = Table(
        f"6. Peers (shared harness, this machine, {repeats} repeat x {sessions} sessions)",
        [
            "peer",
            "version",
            "cpu us/chunk",
            "x raw_httpx",
            "fixed cpu ms (N=10)",
            "ttft ms (N=10)",
            "tools 2x500ms span s",
            "rxreact x floor",
        ],
    )
    base = _median(main.get("raw_httpx", []), "cpu_s")
    for peer in peers:
        m, f, t = main.get(peer, []), fixed.get(peer, []), tools.get(peer, [])
        if not m:
            table.add(peer, "", "FAILED", "", "", "", "", ours)
            continue
        cpu = _median(m, "cpu_s")
        table.add(
            peer,
            m[0].get("version") or "",
            cpu / m[0]["chunks"] * 1e6,
            f"{cpu / base:.1f}",
            _median(f, "cpu_s") * 1e3,
            _median(f, "ttft_s") * 1e3,
            _median(t, "tool_span_s"),
            ours,
        )
    table.notes.append(
        "rxreact x floor: workload 1's ratio, rxreact CPU / httpx_async CPU (this run); "
        "a peer's x raw_httpx is the same kind of ratio from the harness"
    )
    table.data = {"peers": peers, "main": main, "fixed": fixed, "tools": tools}
    return table


def _reference(ours: str) -> Table:
    table = Table(
        "6. Peers: REFERENCE numbers (shared/bench/README.md, another 2-core machine)",
        [
            "peer",
            "version",
            "cpu us/chunk",
            "x raw_httpx",
            "fixed cpu ms (N=10)",
            "ttft ms (N=10)",
            "tools",
            "rxreact x floor (this run)",
        ],
    )
    for peer, version, cpu, ratio, fixed, ttft, tools in REFERENCE:
        table.add(peer, version, cpu, f"{ratio:.1f}", fixed, ttft, tools, ours)
    table.notes.append(
        "REFERENCE, not measured here: the peers' venv was not found (PEERS_VENV); "
        "compare ratios to the floor, not microseconds"
    )
    return table
