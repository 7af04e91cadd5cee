"""One comparison engine for every surface of awm-report: the terminal, `--json` and `--html` show the same
comparisons, computed once by the same code (`load_report`).

Each run's arms are compared within the run (b − a, b the later `--arm`); with several runs, every arm of
a run is compared with every arm of each later run on the tasks all runs share (b − a, b the later run's
arm), paired on (scenario, task, repeat, seed) where those match, unpaired and labelled where they do not.
A run stopped under `--until-decided` leads with its sequential result and shows no fixed-sample p.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from awm_runtime.report._collect import RunData, compare_runs, load_run, run_labels

ACROSS_TITLE = "runs compared on {n} shared tasks (Δ = later RUN − earlier RUN)"


@dataclass(slots=True)
class Report:
    """The runs, each with its statistics, and (with several runs) their comparison on shared tasks."""

    runs: list[RunData]
    across: dict[str, Any] | None

    @property
    def multi(self) -> bool:
        return len(self.runs) > 1


def load_report(paths: Sequence[Path], arms: list[str] | None = None) -> Report:
    """Read every run directory once (streaming) and compare the runs on the tasks they share."""
    labels = run_labels([Path(p) for p in paths])
    multi = len(paths) > 1
    runs = [load_run(Path(p), label, arms=arms, prefix_arms=multi) for p, label in zip(paths, labels, strict=True)]
    return Report(runs, compare_runs(runs) if multi else None)


def run_json(run: RunData) -> dict[str, Any]:
    """One run's summary as `awm-report --json` prints it."""
    return {"run": str(run.path), "label": run.label, **run.stats}


def report_json(report: Report) -> dict[str, Any]:
    """`awm-report --json`: one run's summary; with several, `runs` and `runs_compared` (their comparisons on the
    tasks they share, the same numbers as the terminal and the HTML page)."""
    if not report.multi:
        return run_json(report.runs[0])
    return {"runs": [run_json(run) for run in report.runs], "runs_compared": report.across}


def print_report(console: Console, report: Report) -> None:
    """The terminal report: per run its sequential result first (if any), then its tables; then the runs
    compared on their shared tasks."""
    from awm_runtime.report._print import print_run
    from awm_runtime.report._table import paired_table

    for run in report.runs:
        if report.multi:
            console.print(f"[bold]{run.label}[/] ({run.path})")
        print_run(console, run.stats)
    if report.across is not None:
        title = ACROSS_TITLE.format(n=report.across.get("shared_tasks", 0))
        console.print(f"[bold]{title}[/]")
        table = paired_table(report.across, title="runs compared:")
        console.print(table if table is not None else "no arm of one run shares a task with an arm of another")
