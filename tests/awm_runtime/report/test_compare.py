"""One engine, every surface: load_report's comparisons print, serialise and render with the same numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console

from awm_runtime.logs import EPISODES, SUMMARY
from awm_runtime.report._compare import load_report, print_report, report_json
from awm_runtime.report._html import render
from awm_runtime.report._sections import fmt_signed
from awm_runtime.report._stopping import NOT_VALID


def rec(arm: str, task: int, outcome: str, seed: int) -> dict[str, Any]:
    return {"arm": arm, "scenario": "s", "task_idx": task, "repeat": 0, "seed": seed, "outcome": outcome,
            "reward": 1.0 if outcome == "complete" else 0.0, "verdict": outcome, "policy": {"alias": "p"},
            "expert": None, "format_errors": {}, "usage": {}, "turns": 2}


def write_run(path: Path, outcomes: list[str], seed: int, summary: dict[str, Any] | None = None) -> Path:
    path.mkdir(parents=True)
    (path / EPISODES).write_text("".join(json.dumps(rec("main", i, o, seed)) + "\n" for i, o in enumerate(outcomes)))
    if summary is not None:
        (path / SUMMARY).write_text(json.dumps(summary))
    return path


def terminal(report: Any) -> str:
    console = Console(record=True, width=300)
    print_report(console, report)
    return console.export_text()


def test_two_runs_with_one_seed_are_paired_and_every_surface_shows_the_same_numbers(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a", ["incomplete"] * 6 + ["complete"] * 2, seed=4)
    b = write_run(tmp_path / "b", ["complete"] * 8, seed=4)
    report = load_report([a, b])
    data = report_json(report)
    assert [r["label"] for r in data["runs"]] == ["a", "b"] and data["runs_compared"]["shared_tasks"] == 8
    (c,) = data["runs_compared"]["paired"]
    assert (c["a"], c["b"], c["design"], c["pairs"]) == ("a/main", "b/main", "paired", 8)
    assert c["completion_diff"] == 0.75 and c["completion_test"] == "McNemar exact"
    text = terminal(report)
    diff = fmt_signed(c["completion_diff"], c["completion_diff_ci95"])
    assert "runs compared on 8 shared tasks (Δ = later RUN − earlier RUN)" in text
    assert "a/main → b/main (Δ = b/main − a/main): 8 pairs used" in text
    row = next(x for x in text.splitlines() if "completion (accountable)" in x and diff in x)
    assert c["completion_p_text"] in row
    page = render(report.runs, report.across)
    assert diff in page and c["completion_p_text"] in page
    assert "compared on 8 shared tasks" in page


def test_different_seeds_are_unpaired_and_an_early_stopped_run_voids_every_p_it_takes_part_in(
        tmp_path: Path) -> None:
    seq = {"stop_reason": "decided: main completes more often", "decided": True, "e_value": 25.6, "threshold": 20.0,
           "pairs": 8, "pairs_with_infra_error": 0, "discordant_pairs": 8, "later_arm_wins": 8,
           "theta_interval": [0.6, 1.0], "interval_note": "anytime-valid 95% interval", "test": "mixture SPRT"}
    a = write_run(tmp_path / "a", ["incomplete"] * 8, seed=1, summary={"sequential": seq})
    b = write_run(tmp_path / "b", ["complete"] * 8, seed=2)
    report = load_report([a, b])
    data = report_json(report)
    (c,) = data["runs_compared"]["paired"]
    assert c["design"] == "unpaired" and c["completion_p"] is None and c["completion_p_text"] == NOT_VALID
    first = data["runs"][0]
    assert first["sequential"]["p_anytime"] == 0.03906 and first["sequential"]["completion_diff_interval"] == [0.2, 1.0]
    text = terminal(report)
    assert text.index("until-decided: decided") < text.index("awm-run summary") and "UNPAIRED" in text
    assert "anytime-valid p = min(1, 1/E) = 0.0391" in text
    page = render(report.runs, report.across)
    assert page.index('id="sequential"') < page.index('id="completion"') and NOT_VALID in page


def test_one_run_prints_its_summary_as_before(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a", ["complete", "incomplete"], seed=0)
    report = load_report([a])
    data = report_json(report)
    assert data["run"] == str(a) and data["arms"]["main"]["episodes"] == 2 and report.across is None
    assert "runs compared" not in terminal(report)
