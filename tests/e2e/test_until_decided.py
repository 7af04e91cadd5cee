"""`awm-run --until-decided` as a user runs it: a real difference stops early; identical arms run to the budget."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

Awm = Callable[..., subprocess.CompletedProcess[str]]
DIFFERENT = ("--arm", "novice:policy=sim/novice,expert=none", "--arm", "oracle:policy=sim/oracle,expert=none")
IDENTICAL = ("--arm", "one:policy=sim/novice,expert=none", "--arm", "two:policy=sim/novice,expert=none")


def _lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]


def test_a_real_difference_stops_early_with_fewer_episodes_than_the_plan(awm: Awm, tmp_path: Path) -> None:
    out = tmp_path / "decided"
    proc = awm("run", *DIFFERENT, "--until-decided", "--repeats", "2", "--concurrency", "4", "--out", str(out),
               "--preflight", "off")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    seq = summary["sequential"]
    assert seq["decided"] and seq["stop_reason"].startswith("decided: oracle completes more often")
    assert seq["e_value"] >= 20 and seq["theta_interval"][0] > 0.5 and not summary["interrupted"]
    records = _lines(out)
    assert len(records) < summary["planned"] / 4, (len(records), summary["planned"])
    # the order is random, not the plan's first scenario: the early pairs span several scenarios
    assert len({r["scenario"] for r in records}) >= 2
    assert proc.stdout.startswith("until-decided: decided") and "e-value" in proc.stdout  # it leads the summary
    assert "provider economics" in proc.stdout and "unknown" in proc.stdout  # sims have no price: never $0
    arm = summary["arms"]["oracle"]["economics"]
    assert arm["cost_known"] is False and arm["usd_per_completed_task"] is None
    assert arm["model_calls"]["policy"]["latency"]["n"] == sum(r["usage"]["policy"]["calls"] for r in records
                                                                 if r["arm"] == "oracle")
    c = summary["paired"][0]
    assert (c["a"], c["b"]) == ("novice", "oracle") and c["completion_diff"] > 0  # Δ = later arm − earlier


def test_identical_arms_run_to_the_budget_and_say_not_decided(awm: Awm, tmp_path: Path) -> None:
    out = tmp_path / "undecided"
    proc = awm("run", *IDENTICAL, "--until-decided", "--max-episodes", "30", "--concurrency", "4",
               "--out", str(out), "--preflight", "off")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    seq = summary["sequential"]
    assert not seq["decided"] and seq["stop_reason"] == "max-episodes budget of 30 spent: not decided"
    assert seq["e_value"] == 1.0 and seq["theta_interval"] == [0.0, 1.0]
    assert len(_lines(out)) == 30 and not summary["interrupted"]
    assert proc.stdout.startswith("until-decided: not decided")


def test_bad_flags_say_what_to_do(awm: Awm, tmp_path: Path) -> None:
    proc = awm("run", "--until-decided", "--out", str(tmp_path / "x"))
    assert proc.returncode == 2 and "give exactly two --arm flags" in proc.stderr
    proc = awm("run", *DIFFERENT, "--max-episodes", "4", "--out", str(tmp_path / "y"))
    assert proc.returncode == 2 and "add --until-decided" in proc.stderr
    proc = awm("run", *DIFFERENT, "--until-decided", "--max-usd", "1", "--out", str(tmp_path / "z"),
               "--preflight", "off")
    assert proc.returncode == 2 and "--max-usd: no price for policy sim/" in proc.stderr
    assert not (tmp_path / "z" / "episodes.jsonl").exists()
