"""awm-run --checkpoint, awm-fork, awm-report and awm-export fork-pairs / ask-labels, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import awm_command

SOURCE = ("--policy", "sim/novice", "--expert", "sim/oracle", "--scenarios", "codeforge_devtools,homehub_smart_home",
          "--tasks", "0-4", "--repeats", "2", "--checkpoint", "asks")


@pytest.fixture(scope="module")
def forked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("forks")
    source, fork = root / "run", root / "fork"
    proc = awm_command("run", "--out", str(source), "--quiet", *SOURCE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = awm_command("fork", str(source), "--at", "asks", "--arm", "ask", "--arm", "solo", "--repeats", "3",
                       "--out", str(fork), "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return source, fork


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_asks_checkpoints_are_before_each_ask_or_nudge(forked: tuple[Path, Path]) -> None:
    source, _ = forked
    for r in lines(source / "episodes.jsonl"):
        asked = {a["turn"] for a in r["expert_answers"]}
        nudged = {n["turn"] for n in r["nudge_log"]}
        folder = source / "checkpoints" / r["episode_id"]
        saved = sorted(int(p.stem.split("-")[1]) + 1 for p in folder.glob("turn-*.json"))
        assert saved == sorted(asked | nudged)  # the checkpoint before turn t is named turn-(t-1)
        assert r["checkpoints"]["count"] == len(saved)


def test_the_value_of_asking_is_positive_with_intervals_and_a_breakdown(forked: tuple[Path, Path]) -> None:
    source, fork = forked
    summary = json.loads((fork / "summary.json").read_text())
    voa = summary["value_of_asking"]
    overall = voa["overall"]
    assert overall["states"] >= 10 and overall["delta_complete"] > 0 and overall["delta_reward"] > 0
    low, high = overall["delta_complete_ci"]
    assert low <= overall["delta_complete"] <= high and low > 0  # the oracle's plan helps the novice
    assert set(voa["by_preceding"]) <= {"tool_error", "format_error", "nothing"} and len(voa["by_preceding"]) >= 2
    assert voa["by_expert"].keys() == {"sim/oracle"} and len(voa["by_scenario"]) == 2 and voa["by_turn"]
    records = lines(fork / "episodes.jsonl")
    states = {(r["fork"]["episode_id"], r["fork"]["turn"]) for r in records}
    assert len(records) == len(states) * 2 * 3  # every state: 3 continuations in each of the 2 arms
    source_ids = {r["episode_id"] for r in lines(source / "episodes.jsonl")}
    source_run = json.loads((source / "manifest.json").read_text())["run_id"]
    for r in records:
        assert r["fork"]["run"] == source_run and r["fork"]["episode_id"] in source_ids
        assert r["arm"] == r["fork"]["mode"] and r["error"] is None
    assert summary["forks"]["checkpoints"] == len(states) and summary["forks"]["at"] == "asks"
    report = awm_command("report", str(fork), "--json")
    assert json.loads(report.stdout)["value_of_asking"]["overall"] == overall
    table = awm_command("report", str(fork))
    assert "Value of asking" in table.stdout and "tool_error" in table.stdout


def test_a_fork_run_resumes_as_a_set_difference(forked: tuple[Path, Path]) -> None:
    _, fork = forked
    before = (fork / "episodes.jsonl").read_bytes()
    proc = awm_command("fork", "--out", str(fork), "--resume", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["already_done"] == len(before.splitlines())
    assert (fork / "episodes.jsonl").read_bytes() == before


@pytest.mark.parametrize("fmt", ["fork-pairs", "ask-labels"])
def test_exports_load_with_datasets_and_never_target_expert_text(forked: tuple[Path, Path], tmp_path: Path,
                                                                  fmt: str) -> None:
    datasets = pytest.importorskip("datasets")
    _, fork = forked
    for continuation in (("first", "whole") if fmt == "fork-pairs" else ("first",)):
        out = tmp_path / f"{fmt}-{continuation}.jsonl"
        proc = awm_command("export", str(fork), "--format", fmt, "--out", str(out), "--continuation", continuation)
        assert proc.returncode == 0, proc.stderr[-2000:]
        rows = lines(out)
        assert rows, proc.stderr
        loaded = datasets.load_dataset("json", data_files=str(out), split="train")
        assert loaded.num_rows == len(rows)
        advice = [m["content"] for r in lines(fork / "episodes.jsonl") for m in r["messages"]
                  if m["source"] == "expert"]
        assert advice
        for row in rows:
            if fmt == "fork-pairs":
                assert row["chosen_outcome"] != row["rejected_outcome"]
                for side in ("chosen", "rejected"):
                    assert row[side] and all(m["content"] not in advice for m in row[side])
                    assert all('"success_state"' not in (m["content"] or "") for m in row[side])
                if continuation == "first":
                    assert [m["role"] for m in row["chosen"]] == ["assistant"] == [m["role"] for m in row["rejected"]]
            else:
                assert row["label"] in ("ask", "solo", "either") and row["messages"]
                assert -1 <= row["value_of_asking"] <= 1
    if fmt == "ask-labels":
        summary = json.loads((fork / "summary.json").read_text())
        assert len(rows) == summary["value_of_asking"]["states"]


def test_bad_fork_input_is_one_line(forked: tuple[Path, Path], tmp_path: Path,
                                    awm: Callable[..., Any]) -> None:
    source, _ = forked
    cases = [
        (("--at", "40", "--arm", "ask"), "--at TURN needs a run with --checkpoint every"),
        (("--at", "soon", "--arm", "ask"), "give a turn"),
        (("--at", "asks", "--arm", "ask:expert=none"), "needs an expert"),
        (("--at", "asks", "--arm", "solo:turns=x"), "positive integer"),
        (("--at", "asks", "--arm", "ask", "--episodes", "colour=red"), "not KEY=VAL"),
    ]
    for i, (args, expected) in enumerate(cases):
        proc = awm("fork", str(source), *args, "--out", str(tmp_path / f"f{i}"))
        assert proc.returncode == 2, proc.stderr
        errors = [line for line in proc.stderr.splitlines() if line.startswith("awm-fork: error:")]
        assert len(errors) == 1 and expected in errors[0], proc.stderr
    plain = tmp_path / "plain"
    made = awm("run", "--out", str(plain), "--quiet", "--scenarios", "codeforge_devtools", "--tasks", "0")
    assert made.returncode == 0
    proc = awm("fork", str(plain), "--at", "asks", "--arm", "ask", "--out", str(tmp_path / "g"))
    assert proc.returncode == 2 and "--checkpoint asks" in proc.stderr


def test_one_sign_one_estimate_and_fork_counts_are_the_continuation_s(forked: tuple[Path, Path]) -> None:
    """Δ = ask − solo in the paired table and the value of asking, the same numbers; the solo arm's counts
    leave out the source episode's prefix (where it asked), which is reported apart."""
    from awm_runtime.report._sections import fmt_signed

    _, fork = forked
    summary = json.loads((fork / "summary.json").read_text())
    (c,) = summary["paired"]
    assert (c["a"], c["b"]) == ("solo", "ask") and c["completion_diff"] > 0  # --arm ask --arm solo: still ask − solo
    overall = summary["value_of_asking"]["overall"]
    assert overall["delta_complete"] == c["completion_diff"]
    assert overall["delta_complete_ci"] == c["completion_diff_ci95"] and overall["delta_reward"] == c["reward_diff"]
    assert overall["from"] == "the paired comparison solo → ask (Δ = ask − solo)"
    solo, ask = summary["arms"]["solo"], summary["arms"]["ask"]
    assert solo["expert_calls"] == 0 and solo["successes_by_ask_style"].keys() <= {"solo"}
    assert solo["ask_styles"] == {"solo": solo["episodes"]} and solo["nudges"] == 0
    assert ask["expert_calls"] >= ask["episodes"]  # the advice at the fork turn, at least
    assert solo["fork_prefix"]["expert_calls"] > 0 and solo["fork_prefix"] == ask["fork_prefix"]  # the same states
    records = lines(fork / "episodes.jsonl")
    assert all(r["fork"]["prefix"]["turns"] == r["fork"]["turn"] for r in records)
    proc = subprocess.run([sys.executable, "-c", "from awm_runtime.cli import report_main; "
                           "raise SystemExit(report_main())", str(fork)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "300"})
    text = proc.stdout
    assert "solo → ask (Δ = ask − solo)" in text and "Value of asking (Δ = ask − solo" in text
    shown = fmt_signed(c["completion_diff"], c["completion_diff_ci95"])
    assert shown in next(x for x in text.splitlines() if "completion (accountable)" in x)
    assert shown in next(x for x in text.splitlines() if "overall" in x)
    assert "fork prefix: expert calls / nudges" in text


def test_a_fork_resumed_after_its_source_changed_pairs_only_continuations_of_the_same_checkpoint(
        tmp_path: Path) -> None:
    """Issue 51: fork.json fixes the plan's checkpoints. A source episode that finishes after the fork began
    (here: its record held back, then restored) sorts among the states of its task; re-planning from the
    source would shift every later state's `repeat` and pair an ask continuation of one state with a solo
    continuation of another. The resume continues exactly the pinned states, and checks them."""
    source, fork = tmp_path / "run", tmp_path / "fork"
    proc = awm_command("run", "--out", str(source), "--quiet", "--policy", "sim/novice", "--expert", "sim/oracle",
                       "--scenarios", "codeforge_devtools", "--tasks", "0-2", "--repeats", "3", "--checkpoint", "asks")
    assert proc.returncode == 0, proc.stderr[-3000:]
    index = lines(source / "checkpoints" / "index.jsonl")
    source_lines = (source / "episodes.jsonl").read_text().splitlines(keepends=True)
    by_task: dict[tuple[str, int], set[tuple[int, str]]] = {}
    for e in index:
        by_task.setdefault((e["scenario"], e["task_idx"]), set()).add((e["repeat"], e["episode_id"]))
    # a task with states of two episodes or more: hold back its first episode's record
    task, episodes = next((k, sorted(v)) for k, v in by_task.items() if len(v) >= 2)
    late = episodes[0][1]
    held = [ln for ln in source_lines if json.loads(ln)["episode_id"] == late]
    (source / "episodes.jsonl").write_text("".join(ln for ln in source_lines if ln not in held))
    proc = awm_command("fork", str(source), "--at", "asks", "--arm", "ask", "--arm", "solo", "--out", str(fork),
                       "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = json.loads((fork / "fork.json").read_text())
    assert late not in {c["episode_id"] for c in plan["checkpoints"]}
    assert all(len(c["sha256"]) == 64 and not Path(c["path"]).is_absolute() for c in plan["checkpoints"])
    # the fork is killed having recorded the ask continuations only; the held-back episode then finishes
    done = [ln for ln in (fork / "episodes.jsonl").read_text().splitlines(keepends=True)
            if json.loads(ln)["arm"] == "ask"]
    (fork / "episodes.jsonl").write_text("".join(done))
    (source / "episodes.jsonl").write_text("".join(source_lines))
    proc = awm_command("fork", "--out", str(fork), "--resume", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = lines(fork / "episodes.jsonl")
    cells: dict[tuple[str, int, int], dict[str, tuple[str, int]]] = {}
    for r in records:
        cells.setdefault((r["scenario"], r["task_idx"], r["repeat"]), {})[r["arm"]] = (
            r["fork"]["episode_id"], r["fork"]["turn"])
    assert len(records) == 2 * len(plan["checkpoints"]) and all(len(c) == 2 for c in cells.values())
    assert all(c["ask"] == c["solo"] for c in cells.values()), cells  # both arms continue the same state
    assert late not in {r["fork"]["episode_id"] for r in records}
    assert any((r["scenario"], r["task_idx"]) == task for r in records)
    # a pinned checkpoint that changed in the source: the resume refuses, in one line
    pinned = source / "checkpoints" / plan["checkpoints"][0]["path"]
    pinned.write_bytes(pinned.read_bytes() + b" ")
    proc = awm_command("fork", "--out", str(fork), "--resume")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "of the fork plan (fork.json) changed in" in proc.stderr and "fork into another --out" in proc.stderr
