"""A report in Jupyter: the table, then each case's marble diagram (the existing SVG) with
its failing evaluators' reasons beside it.

Diagrams are drawn only here, when the report is shown, never while it is made; a report of
thousands of cases draws the failing ones first, up to :data:`MAX_DIAGRAMS`. Everything
quoted from a run is escaped: an answer is text, never markup.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from rxreact.evals._replay import recording_of
from rxreact.evals._table import cell, seconds, tokens

if TYPE_CHECKING:
    from rxreact.evals._compare import Comparison
    from rxreact.evals._report import CaseResult, Report

__all__ = ["MAX_DIAGRAMS", "comparison_html", "report_html"]

MAX_DIAGRAMS = 40
"""Cases drawn at most (failing ones first)."""

_TABLE = "border-collapse:collapse;font-family:ui-sans-serif,system-ui,sans-serif;font-size:13px"
_CELL = "border-bottom:1px solid #e3e7ee;padding:3px 8px;text-align:left"
_PASS, _FAIL = "#2e9d5b", "#c8372d"


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _colored(text: str) -> str:
    color = _FAIL if "✗" in text or text == "error" else _PASS if text == "✓" else "#333"
    return f'<td style="{_CELL};color:{color}">{_e(text)}</td>'


def _row(case: CaseResult, names: list[str]) -> str:
    run = next((r for r in case.runs if not r.passed), case.runs[0])
    cells = "".join(_colored(cell(run, n)) for n in names)
    mark = "✓" if case.passed else "✗"
    rate = f" ({case.pass_rate:.0%})" if len(case.runs) > 1 else ""
    return (
        f"<tr>{_colored(mark)}<td style='{_CELL}'>{_e(case.name)}{rate}</td>{cells}"
        f"<td style='{_CELL}'>{seconds(run.duration)}</td>"
        f"<td style='{_CELL}'>{seconds(run.first_token)}</td>"
        f"<td style='{_CELL}'>{tokens(run.usage)}</td></tr>"
    )


def _diagram(case: CaseResult) -> str:
    run = next((r for r in case.runs if not r.passed), case.runs[0])
    svg = recording_of(run.recording).to_svg(width=720, title=f"{case.name} · run {run.repeat + 1}")
    reasons = "".join(f"<li>{_e(reason)}</li>" for reason in run.reasons) or "<li>passed</li>"
    color = _PASS if run.passed else _FAIL
    return (
        f'<div style="display:flex;gap:12px;align-items:flex-start;margin:8px 0">'
        f'<div style="max-width:740px;overflow-x:auto">{svg}</div>'
        f'<div style="font-family:ui-sans-serif,system-ui,sans-serif;font-size:13px;'
        f'color:{color};max-width:360px"><b>{_e(case.name)}</b><ul>{reasons}</ul></div></div>'
    )


def report_html(report: Report) -> str:
    """The report's HTML (``_repr_html_``)."""
    names = list(report.evaluators)
    head = "".join(f"<th style='{_CELL}'>{_e(h)}</th>" for h in ["", "case", *names])
    head += "".join(f"<th style='{_CELL}'>{h}</th>" for h in ("duration", "first token", "tokens"))
    rows = "".join(_row(case, names) for case in report.cases)
    summary = (
        f"pass rate {report.pass_rate:.1%} · latency p50 "
        f"{seconds(report.latency('duration', 50))}, p95 {seconds(report.latency('duration', 95))}"
        f" · first token p50 {seconds(report.latency('first_token', 50))}"
    )
    drawn = sorted(report.cases, key=lambda c: c.passed)[:MAX_DIAGRAMS]
    more = len(report.cases) - len(drawn)
    diagrams = "".join(_diagram(case) for case in drawn)
    note = f"<p>{more} more case(s) not drawn.</p>" if more > 0 else ""
    title = _e(report.name or "evaluation")
    return (
        f'<div class="rxreact-report"><h4 style="margin:4px 0">{title}</h4>'
        f'<table style="{_TABLE}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
        f"<p style='font-family:ui-sans-serif,system-ui,sans-serif;font-size:13px'>"
        f"{_e(summary)}</p><details open><summary>marble diagrams</summary>{diagrams}{note}"
        f"</details></div>"
    )


def comparison_html(comparison: Comparison) -> str:
    """A comparison in Jupyter: its summary, then each regressed case's first divergence
    with the two runs' diagrams one above the other (``Comparison._repr_html_``)."""
    font = "font-family:ui-sans-serif,system-ui,sans-serif;font-size:13px"
    parts = [f'<div class="rxreact-comparison" style="{font}">']
    parts.append(
        f"<pre style='{font};white-space:pre-wrap'>{_e(str(comparison).splitlines()[0])}</pre>"
    )
    for change in comparison.regressed[:MAX_DIAGRAMS]:
        parts.append(
            f"<h4 style='margin:6px 0'>{_e(change.case)}</h4>"
            f"<p style='color:{_FAIL}'>{_e(change.divergence or '')}</p>"
        )
        for label, run in (("now", change.run), ("baseline", change.baseline_run)):
            if run is not None:
                svg = recording_of(run).to_svg(width=720, title=f"{change.case} · {label}")
                parts.append(f'<div style="max-width:740px;overflow-x:auto">{svg}</div>')
    parts.append("</div>")
    return "".join(parts)
