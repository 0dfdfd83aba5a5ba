"""The cost of typed answers streaming as they form: CPU per chunk of a typed answer's round
with ``output_partial`` events (``output_type=``) and without them (the same request, the same
JSON answer, parsed once at the end), against a mock in another process.

``python -m benchmarks.output_partials [--quick]``. The answer is a form (rows of a city, a
number and a note) in 3-character chunks, written at once (so the agent's delivery batches
are large: the parser reads each batch whole, mostly in ``json``'s C scanner) or paced (a
chunk every 2 ms: a batch, a read and a partial about per chunk). Each variant runs in its
own process, alternating; the table shows medians.
"""

from __future__ import annotations

import statistics
import sys
import time

from pydantic import BaseModel

from benchmarks._harness import Table, emit, mock_server, run_child


class Row(BaseModel):
    city: str
    celsius: int
    note: str


class Form(BaseModel):
    title: str
    rows: list[Row]


def session(url: str, typed: bool, sessions: int, paced: bool) -> tuple[float, int, int]:
    """Median CPU seconds per session, the chunks of the answer and the partials seen."""
    from rxreact import OpenAIChatModel, OutputPartial, ReactAgent, TextDelta
    from rxreact.checks.validation import OutputSpec

    spec = OutputSpec(Form)
    with OpenAIChatModel("mock", base_url=url, api_key="k", max_retries=0) as model:
        agent = ReactAgent(model)
        question = "Fill the form, paced." if paced else "Fill the form."
        times: list[float] = []
        chunks = partials = 0
        for i in range(sessions + 1):  # the first warms up
            chunks = partials = 0
            start = time.process_time()
            if typed:
                for event in agent.iter(question, output_type=Form):
                    partials += type(event) is OutputPartial
                    chunks += type(event) is TextDelta
            else:
                text = []
                for event in agent.iter(
                    question, options={"response_format": spec.response_format}
                ):
                    if type(event) is TextDelta:
                        chunks += 1
                        text.append(event.delta)
                spec.parse("".join(text))  # the typed answer, validated once, as a typed run does
            if i:
                times.append(time.process_time() - start)
    return statistics.median(times), chunks, partials


PACES = {
    "at once": "the mock writes the whole answer at once (120 rows, ~2,700 chunks)",
    "paced": "a chunk every 2 ms (12 rows, ~290 chunks): about one delivery batch per chunk",
}


def run(url: str, quick: bool) -> Table:
    sessions, repeats = (5, 1) if quick else (15, 3)
    table = Table(
        f"Typed answers as they form ({sessions} sessions x {repeats} repeats)",
        ["stream", "round", "chunks", "cpu us/chunk", "x without partials", "partials"],
    )
    for pace, note in PACES.items():
        results: dict[str, list[dict[str, float]]] = {"plain": [], "typed": []}
        for _ in range(repeats):
            for variant in results:
                args = [variant, url, str(sessions), pace]
                results[variant].append(run_child("output_partials", args))
        median = {
            v: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for v, rs in results.items()
        }
        plain = median["plain"]["cpu_s"] / median["plain"]["chunks"]
        for variant, label in (("plain", "without partials"), ("typed", "output_type=")):
            r = median[variant]
            per_chunk = r["cpu_s"] / r["chunks"]
            table.add(
                pace,
                label,
                int(r["chunks"]),
                per_chunk * 1e6,
                f"{per_chunk / plain:.3f}",
                int(r["partials"]),
            )
        table.notes.append(f"{pace}: {note}")
    table.notes.append("process CPU time of the agent's process (all threads) per session / chunks")
    return table


def child(variant: str, url: str, sessions: str, pace: str) -> dict[str, float]:
    cpu, chunks, partials = session(url, variant == "typed", int(sessions), pace == "paced")
    return {"cpu_s": cpu, "chunks": chunks, "partials": partials}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        emit(child(*sys.argv[2:6]))
    else:
        with mock_server("benchmarks._typed_mock") as url:
            print(run(url, "--quick" in sys.argv).render())
