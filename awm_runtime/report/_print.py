"""One run's report on the terminal, the same for awm-run, awm-fork and awm-report."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from awm_runtime.report._forks import forks_table
from awm_runtime.report._stopping import sequential_text
from awm_runtime.report._table import economics_table, paired_table, summary_table


def print_run(console: Console, stats: dict[str, Any]) -> None:
    """A run's summary.json on the terminal: its sequential result first (after an early stop the only valid
    p, so it leads), then the summary table, the paired and fork comparisons where it has them, and what it
    cost."""
    seq = stats.get("sequential")
    if isinstance(seq, dict):
        paired = [c for c in stats.get("paired") or [] if isinstance(c, dict)]
        console.print(sequential_text(seq, paired[0] if paired else None), highlight=False)
    console.print(summary_table(stats))
    for table in (paired_table(stats), forks_table(stats)):
        if table is not None:
            console.print(table)
    console.print(economics_table(stats))
