""":class:`Dataset`: named cases and the evaluators that score every one of them."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any, cast

from rxreact._validate import described
from rxreact.evals._case import Case, check_evaluators
from rxreact.evals.errors import DatasetError

if TYPE_CHECKING:
    from rxreact.evals._report import Report

__all__ = ["Dataset"]


class Dataset:
    """Cases to run an agent on, and the evaluators that score each run.

    ::

        dataset = Dataset([Case("paris", "Weather in Paris?", expected="sunny")],
                          evaluators=[Contains("sunny"), MaxRounds(2)])
        report = dataset.evaluate(agent)
        print(report)

    Args:
        cases: the cases; their names must be unique.
        name: the dataset's name (reports show it).
        evaluators: evaluators applied to every case (a case's own come after them).

    Raises:
        DatasetError: two cases share a name, or an item is not a :class:`Case`.
    """

    def __init__(
        self,
        cases: Iterable[Case],
        *,
        name: str | None = None,
        evaluators: Sequence[Any] = (),
    ) -> None:
        self.cases: tuple[Case, ...] = tuple(cases)
        seen: set[str] = set()
        for i, case in enumerate(self.cases):
            if not isinstance(case, Case):
                raise DatasetError(f"cases[{i}] must be a Case, got {described(case)}")
            if case.name in seen:
                raise DatasetError(
                    "two cases have this name; case names must be unique",
                    case=case.name,
                    field="name",
                )
            seen.add(case.name)
        if name is not None and not isinstance(name, str):
            raise DatasetError(f"name must be a str, got {described(name)}", field="name")
        self.name: str | None = name
        self.evaluators: tuple[Any, ...] = check_evaluators(evaluators)

    def __repr__(self) -> str:
        named = f"{self.name!r}, " if self.name else ""
        return f"Dataset({named}{len(self.cases)} cases, {len(self.evaluators)} evaluators)"

    def __len__(self) -> int:
        return len(self.cases)

    def __getitem__(self, name: str) -> Case:
        """The case named ``name``."""
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(name)

    # -- files (pydantic-evals' format; needs the ``evals`` extra) ------------------------------

    @classmethod
    def from_file(cls, path: str | PathLike[str]) -> Dataset:
        """Load a dataset file (YAML or JSON, pydantic-evals' format).

        Raises:
            DatasetError: the file cannot be read or used (naming the file, case, field).
        """
        return cast(Dataset, _files().load_dataset(path))

    def to_file(self, path: str | PathLike[str]) -> None:
        """Write the dataset as YAML or JSON (by the file's suffix), pydantic-evals' format."""
        _files().save_dataset(self, path)

    @staticmethod
    def json_schema() -> dict[str, Any]:
        """The JSON schema of dataset files, for editors (``$schema``)."""
        return cast(dict[str, Any], _files().dataset_json_schema())

    # -- running ---------------------------------------------------------------------------------

    def evaluate(
        self,
        agent: Any,
        *,
        concurrency: int = 8,
        repeat: int = 1,
        record_to: str | PathLike[str] | None = None,
        progress: bool = True,
        timeout: float | None = None,
        virtual_time: bool = False,
        output_type: Any = None,
    ) -> Report:
        """Run every case (``repeat`` times each), record the runs, score them (blocking).

        Args:
            agent: a ``ReactAgent``, or a factory ``(scheduler) -> ReactAgent`` (called once
                per run; with ``virtual_time=True`` it is given the ``TestScheduler``).
            concurrency: runs in flight at once.
            repeat: runs per case (their pass rate, pass@k and pass^k are reported).
            record_to: a directory that receives one JSON-lines file per run as it ends.
            progress: a progress bar on stderr when it is a terminal.
            timeout: seconds a run may take (on its clock) before it fails as timed out.
            virtual_time: run every case on one ``TestScheduler``: scripted pauses and
                ``reactivex`` timers take no real time, and the report's times are exactly
                the scripted ones.
            output_type: the typed answer each run asks for (as ``agent.stream``'s).

        Raises:
            EvaluationInterrupted: Ctrl-C; ``error.report`` holds what finished.
        """
        from rxreact.evals._runner import evaluate

        return evaluate(
            self,
            agent,
            concurrency=concurrency,
            repeat=repeat,
            record_to=record_to,
            progress=progress,
            timeout=timeout,
            virtual_time=virtual_time,
            output_type=output_type,
        )

    async def aevaluate(
        self,
        agent: Any,
        *,
        concurrency: int = 8,
        repeat: int = 1,
        record_to: str | PathLike[str] | None = None,
        progress: bool = True,
        timeout: float | None = None,
        virtual_time: bool = False,
        output_type: Any = None,
    ) -> Report:
        """:meth:`evaluate`, awaiting instead of blocking; cancelling it cancels the runs."""
        from rxreact.evals._runner import aevaluate

        return await aevaluate(
            self,
            agent,
            concurrency=concurrency,
            repeat=repeat,
            record_to=record_to,
            progress=progress,
            timeout=timeout,
            virtual_time=virtual_time,
            output_type=output_type,
        )


def _files() -> Any:
    """The dataset file codec (pydantic-evals' format), imported when a file is used: it
    needs PyYAML (the ``evals`` extra)."""
    return importlib.import_module("rxreact.evals._files")
