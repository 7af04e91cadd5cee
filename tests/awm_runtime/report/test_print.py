"""One run on the terminal, the same for awm-run, awm-fork and awm-report: the sequential result leads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from awm_runtime.report import apply_stopping, load_report, print_run
from tests.awm_runtime.report.test_compare import write_run
from tests.awm_runtime.report.test_stopping import stopped_run


def shown(stats: dict[str, Any]) -> str:
    console = Console(record=True, width=300)
    print_run(console, stats)
    return console.export_text()


def test_a_plain_run_shows_its_summary_and_what_it_cost_and_no_comparison(tmp_path: Path) -> None:
    stats = load_report([write_run(tmp_path / "a", ["complete", "incomplete"], seed=1)]).runs[0].stats
    text = shown(stats)
    assert "main" in text and "provider economics" in text
    assert "paired comparison" not in text and "until-decided" not in text
    assert text.index("main") < text.index("provider economics")


def test_a_stopped_run_leads_with_its_sequential_result_then_its_tables() -> None:
    stats, seq = stopped_run()
    apply_stopping(stats, seq)
    text = shown(stats)
    assert text.startswith("until-decided: decided (b completes more often)")
    assert text.index("until-decided") < text.index("paired comparison") < text.index("provider economics")
