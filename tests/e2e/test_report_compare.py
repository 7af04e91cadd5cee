"""awm-report as a user runs it: the same comparisons, with the same numbers, in the terminal, --json and
--html; an --until-decided run leads with its sequential result and shows no fixed-sample p-value."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.report._sections import fmt_signed, p_text
from awm_runtime.report._stopping import NOT_VALID
from tests.e2e._inproc import Result, run_cli
from tests.e2e.test_report_html import Page

ARMS = ("--scenarios", "codeforge_devtools", "--tasks", "0-5", "--expert", "none", "--preflight", "off", "--quiet")


def awm(name: str, *args: str) -> Result:
    """One of our commands, in process (tests/e2e/_inproc.py), its terminal 300 columns wide (no table cell wraps)."""
    return run_cli(name, *args, env={"COLUMNS": "300"}, timeout=600)


def run(out: Path, *args: str) -> Path:
    proc = awm("run", "--out", str(out), *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def three_surfaces(tmp_path: Path, *runs: Path) -> tuple[str, dict[str, Any], str, Page]:
    terminal = awm("report", *map(str, runs))
    as_json = awm("report", *map(str, runs), "--json")
    html = tmp_path / "r.html"
    page = awm("report", *map(str, runs), "--html", str(html))
    assert terminal.returncode == as_json.returncode == page.returncode == 0, terminal.stderr + page.stderr
    text = html.read_text()
    return terminal.stdout, json.loads(as_json.stdout), text, Page(text)


def test_two_runs_with_the_same_seed_are_compared_paired_with_the_same_numbers_everywhere(tmp_path: Path) -> None:
    novice = run(tmp_path / "novice", *ARMS, "--policy", "sim/novice", "--seed", "5")
    oracle = run(tmp_path / "oracle", *ARMS, "--policy", "sim/oracle", "--seed", "5")
    terminal, data, text, page = three_surfaces(tmp_path, novice, oracle)
    assert [r["run"] for r in data["runs"]] == [str(novice), str(oracle)]
    across = data["runs_compared"]
    assert across["shared_tasks"] == 6
    (c,) = across["paired"]  # one arm each: one comparison, the later run's arm minus the earlier's
    assert c["design"] == "paired" and c["pairs"] == 6 and c["b"].startswith("oracle/")
    assert c["completion_diff"] > 0 and c["completion_p"] is not None
    assert "runs compared on 6 shared tasks (Δ = later RUN − earlier RUN)" in terminal
    assert f"Δ = {c['b']} − {c['a']}" in terminal and "6 pairs used" in terminal
    diff = fmt_signed(c["completion_diff"], c["completion_diff_ci95"])
    reward = fmt_signed(c["reward_diff"], c["reward_diff_ci95"])
    row = next(line for line in terminal.splitlines() if "completion (accountable)" in line and diff in line)
    assert c["completion_p_text"] in row
    assert reward in terminal
    html_rows = page.tables["table-forest-runs-0"][1:]
    assert html_rows[0][:3] == ["completion (accountable)", diff, p_text(c, "completion")]
    assert html_rows[2][1] == reward
    assert "compared on 6 shared tasks" in text


def test_two_runs_with_different_seeds_are_compared_unpaired_and_labelled(tmp_path: Path) -> None:
    one = run(tmp_path / "one", *ARMS, "--policy", "sim/novice", "--seed", "1")
    two = run(tmp_path / "two", *ARMS, "--policy", "sim/oracle", "--seed", "2")
    terminal, data, _text, page = three_surfaces(tmp_path, one, two)
    (c,) = data["runs_compared"]["paired"]
    assert c["design"] == "unpaired" and c["completion_test"].startswith("Fisher")
    assert "UNPAIRED" in terminal and c["completion_p_text"] in terminal
    html_rows = page.tables["table-forest-runs-0"][1:]
    assert html_rows[0][1] == fmt_signed(c["completion_diff"], None) and c["completion_p_text"] in html_rows[0][2]


@pytest.fixture(scope="module")
def decided(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    out = tmp_path_factory.mktemp("decided") / "run"
    proc = awm("run", "--arm", "novice:policy=sim/novice,expert=none", "--arm", "oracle:policy=sim/oracle,expert=none",
               "--until-decided", "--repeats", "2", "--concurrency", "4", "--out", str(out), "--preflight", "off")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc


def numeric_p(c: dict[str, Any]) -> list[str]:
    return [k for k, v in c.items() if k.endswith(("_p", "_p_holm", "_p_log10", "_p_min"))
            and isinstance(v, int | float)]


def test_after_an_early_stop_the_sequential_result_leads_and_no_fixed_sample_p_is_shown(
        decided: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    out, proc = decided
    summary = json.loads((out / "summary.json").read_text())
    seq = summary["sequential"]
    assert seq["decided"] and seq["cost_usd"] is None and seq["cost_known"] is False  # sims: no price, not $0
    assert seq["p_anytime"] == pytest.approx(min(1.0, 1 / seq["e_value"]), rel=1e-3)
    lo, hi = seq["completion_diff_interval"]
    assert 0 < lo <= hi
    (c,) = summary["paired"]
    assert numeric_p(c) == [] and c["completion_p_text"] == NOT_VALID
    # awm-run's own final summary leads with it too
    assert proc.stdout.lstrip().startswith("until-decided: decided") and "anytime-valid p" in proc.stdout
    assert f"{seq['discordant_pairs']} discordant pairs" in proc.stdout and NOT_VALID in proc.stdout
    terminal, data, text, page = three_surfaces(tmp_path, out)
    assert terminal.lstrip().startswith("until-decided: decided") and "anytime-valid p = min(1, 1/E)" in terminal
    assert f"the table counts {c['pairs']} pairs" in terminal
    assert numeric_p(data["paired"][0]) == [] and data["sequential"]["p_anytime"] == seq["p_anytime"]
    assert text.index('id="sequential"') < text.index('id="completion"')  # it leads the page
    for row in page.tables["table-forest-0"][1:]:
        assert row[2] == NOT_VALID and row[3] == NOT_VALID
    assert "McNemar" not in terminal and "sign-flip" not in terminal
    assert all("McNemar" not in cell for row in page.tables["table-forest-0"] for cell in row)


def test_the_live_view_says_cost_unknown_never_zero_dollars(tmp_path: Path) -> None:
    proc = awm("run", "--out", str(tmp_path / "live"), *ARMS[:-1], "--policy", "sim/novice")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "cost unknown" in proc.stderr and "$0.0000" not in proc.stderr
    arm = json.loads((tmp_path / "live" / "summary.json").read_text())["arms"]["main"]
    assert arm["cost_usd"] is None and arm["economics"]["cost_usd"] is None
    records = [json.loads(line) for line in (tmp_path / "live" / "episodes.jsonl").read_text().splitlines()]
    usage = [u for r in records for u in r["usage"].values() if u["calls"]]
    assert usage and all(u["cost_usd"] is None and u["cost_known"] is False for u in usage)  # each record too


def test_a_grpo_arm_names_the_expert_its_episodes_used(group_run: Path) -> None:
    data = json.loads(awm("report", str(group_run), "--json").stdout)
    (arm,) = data["arms"].values()
    assert arm["expert_calls"] > 0 and arm["expert"]["alias"] == "sim/oracle"
    assert 0 < arm["expert_episodes"]["sim/oracle"] < arm["episodes"]
    terminal = awm("report", str(group_run)).stdout
    line = next(x for x in terminal.splitlines() if x.lstrip("│ ").startswith("expert "))
    assert "sim/oracle" in line and "none" not in line
