"""``print(report)``: the per-case table, then what it adds up to.

::

    case    EqualsExpected  ToolCalls  MaxRounds  duration  first token  tokens
    paris   ✓               ✓          ✓          1.25 s    0.75 s       120
    oslo    ✗               ✗          ✓          2.00 s    1.50 s       140
    average 0.50            0.50       1.00
    pass rate 50.0% (1 of 2 runs) · cases passed 1 of 2
    latency  total p50 1.62 s  p95 1.96 s · first token p50 1.12 s  p95 1.46 s
    usage    agent 260 tokens (prompt 200, completion 60) · judge none
    failures
      oslo: EqualsExpected: expected 'sunny', got 'rain'; ...

With ``repeat=k`` a cell counts the runs that passed (``2/3``), and pass@k / pass^k columns
follow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rxreact.evals._results import sum_usage
from rxreact.messages import Usage

if TYPE_CHECKING:
    from rxreact.evals._report import CaseResult, Report, RunResult

__all__ = ["cell", "report_text", "seconds", "tokens"]


def seconds(value: float | None) -> str:
    """``1.25 s``, or ``-`` for none."""
    return "-" if value is None else f"{value:.2f} s"


def tokens(usage: Usage | None) -> str:
    """A usage's total tokens, or ``-``."""
    if usage is None:
        return "-"
    total = usage.total_tokens
    if total is None:
        total = (usage.prompt_tokens or 0) + (usage.completion_tokens or 0)
    return str(total)


def cell(run: RunResult, name: str) -> str:
    """One evaluator's verdict on one run: ✓ / ✗, a score, a label, ``error``."""
    result = run.results.get(name)
    if result is None:
        return ""
    if result.error is not None:
        return "error"
    if result.kind == "assertion":
        return "✓" if result.passed else "✗"
    if result.kind == "score":
        return f"{result.score:.2f}" + ("" if result.passed else " ✗")
    label = str(result.value)
    return label if len(label) <= 14 else label[:13] + "…"


def _case_row(case: CaseResult, names: Sequence[str], repeated: bool) -> list[str]:
    runs = case.runs
    if not repeated:
        run = runs[0]
        row = [case.name, *(cell(run, n) for n in names)]
        row += [seconds(run.duration), seconds(run.first_token), tokens(run.usage)]
        return row + (["error"] if run.error else [])
    row = [case.name]
    for name in names:
        passing = sum(1 for r in runs if name in r.results and r.results[name].passed)
        row.append(f"{passing}/{len(runs)}")
    durations = [r.duration for r in runs if r.duration is not None]
    firsts = [r.first_token for r in runs if r.first_token is not None]
    row += [
        seconds(sum(durations) / len(durations) if durations else None),
        seconds(sum(firsts) / len(firsts) if firsts else None),
        tokens(sum_usage(r.usage for r in runs)),
        f"{case.pass_rate:.2f}",
        f"{case.pass_at_k:.2f}",
        f"{case.pass_hat_k:.2f}",
    ]
    errors = sum(1 for r in runs if r.error)
    return row + ([f"{errors} error(s)"] if errors else [])


def _usage_words(usage: Usage | None) -> str:
    if usage is None:
        return "none"
    parts = []
    if usage.prompt_tokens is not None:
        parts.append(f"prompt {usage.prompt_tokens}")
    if usage.completion_tokens is not None:
        parts.append(f"completion {usage.completion_tokens}")
    return f"{tokens(usage)} tokens" + (f" ({', '.join(parts)})" if parts else "")


def _aligned(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows if i < len(row)) for i in range(len(rows[0]))]
    return [
        "  ".join(
            value.ljust(widths[i]) if i < len(widths) else value for i, value in enumerate(row)
        ).rstrip()
        for row in rows
    ]


def report_text(report: Report) -> str:
    """The whole text of ``print(report)``."""
    names = list(report.evaluators)
    runs = report.run_results
    repeated = any(len(c.runs) > 1 for c in report.cases)
    header = ["case", *names, "duration", "first token", "tokens"]
    if repeated:
        header = [
            "case",
            *names,
            "mean duration",
            "mean first token",
            "tokens",
            "pass rate",
            "pass@k",
            "pass^k",
        ]
    averages = report.averages()
    rows = [header, *(_case_row(c, names, repeated) for c in report.cases)]
    rows.append(["average", *(f"{averages[n]:.2f}" if n in averages else "" for n in names)])
    title = f"{report.name or 'evaluation'}: {len(report.cases)} case(s), {len(runs)} run(s)"
    if report.interrupted:
        title += " (interrupted: the runs that finished)"
    passed_runs = sum(r.passed for r in runs)
    passed_cases = sum(c.passed for c in report.cases)
    lines = [title, *_aligned(rows), ""]
    lines.append(
        f"pass rate {report.pass_rate:.1%} ({passed_runs} of {len(runs)} runs) · "
        f"cases passed {passed_cases} of {len(report.cases)}"
    )
    lines.append(
        f"latency   total p50 {seconds(report.latency('duration', 50))}  "
        f"p95 {seconds(report.latency('duration', 95))} · first token p50 "
        f"{seconds(report.latency('first_token', 50))}  "
        f"p95 {seconds(report.latency('first_token', 95))}"
    )
    lines.append(
        f"usage     agent {_usage_words(report.usage)} · judge {_usage_words(report.judge_usage)}"
    )
    failures = report.failures
    if failures:
        lines.append("failures")
        lines += [f"  {failure}" for failure in failures]
    return "\n".join(lines)
