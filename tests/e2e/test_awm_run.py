"""awm-run as a user runs it on the built-in worlds, checked against BRIEF §5: the default run in its own process,
the rest in process (tests/e2e/_inproc.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.worlds import BUILTIN_DATA, load_dataset
from tests.e2e._inproc import Result, run_cli

RECORD_FIELDS = {"episode_id", "arm", "scenario", "task_idx", "repeat", "policy", "expert", "outcome", "verdict",
                 "reward", "reward_components", "turns", "tool_calls", "tool_errors", "format_errors",
                 "expert_calls", "nudges", "messages", "usage", "timings", "error"}
SOURCES = {"policy", "world", "expert", "nudge", "system"}


def awm_run(*args: str, timeout: float = 600, env: dict[str, str] | None = None) -> Result:
    """awm-run called in this process (tests/e2e/_inproc.py): for tests whose subject is the run, not the process.
    A run past `timeout` ends the test process, with every thread's stack on its stderr."""
    return run_cli("run", *args, env=env, timeout=timeout)


def awm_run_subprocess(*args: str, timeout: float = 600,
                       env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """awm-run in its own process: for tests whose subject is the process (exit codes of the real program ...)."""
    cmd = [sys.executable, "-c", "from awm_runtime.cli import run_main; raise SystemExit(run_main())", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def builtin_tasks() -> int:
    return sum(len(sc.tasks) for sc in load_dataset(BUILTIN_DATA).scenarios.values())


@pytest.fixture(scope="module")
def default_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("default") / "run"
    return awm_run_subprocess("--out", str(out), "--quiet"), out  # the real program, exit code and streams


def test_default_run_writes_one_record_per_builtin_task(default_run: Any, builtin_tasks: int) -> None:
    proc, out = default_run
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) == builtin_tasks >= 60
    assert len({(r["arm"], r["scenario"], r["task_idx"], r["repeat"]) for r in recs}) == builtin_tasks
    for name in ("manifest.json", "events.jsonl", "summary.json"):
        assert (out / name).is_file()
    for r in recs:
        assert set(r) >= RECORD_FIELDS
        assert {m["source"] for m in r["messages"]} <= SOURCES
        assert r["policy"]["alias"] == "sim/novice" and r["policy"]["simulated"] is True
        assert r["expert"]["alias"] == "sim/oracle"
        assert r["outcome"] in ("complete", "incomplete", "format_error", "error")


def test_default_run_shows_format_errors_nudges_and_expert_calls(default_run: Any) -> None:
    _, out = default_run
    recs = records(out)
    assert sum(sum(r["format_errors"].values()) for r in recs) > 0
    assert sum(r["nudges"] for r in recs) > 0
    assert sum(r["expert_calls"] for r in recs) > 0
    assert any(r["ask_style"] == "recovery" for r in recs)
    for r in recs:  # each bad reply is counted once, by kind
        bad = sum(1 for m in r["messages"] if m["source"] == "policy" and m.get("format_error"))
        non_warning = sum(v for k, v in r["format_errors"].items() if k != "multiple_calls")
        assert bad == non_warning


def test_default_run_summary_and_events(default_run: Any) -> None:
    proc, out = default_run
    summary = json.loads((out / "summary.json").read_text())
    assert summary["arms"]["main"]["simulated"] is True
    assert "simulated" in proc.stdout.lower()
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    names = {e["event"] for e in events}
    assert {"run_started", "episode_started", "turn_ended", "tool_called", "episode_ended", "run_finished"} <= names
    per_episode = [e for e in events if e["event"] == "tool_called"]
    assert all(e.get("episode_id") and e.get("scenario") for e in per_episode)


def test_oracle_completes_every_builtin_task(tmp_path: Path, builtin_tasks: int) -> None:
    out = tmp_path / "oracle"
    proc = awm_run("--policy", "sim/oracle", "--expert", "none", "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) == builtin_tasks
    assert all(r["outcome"] == "complete" and r["verdict"] == "complete" and r["reward"] == 1.0 for r in recs)


@pytest.mark.parametrize(("args", "message"), [
    (["--policy", "gpt-9000"], "unknown model alias 'gpt-9000'"),
    (["--expert", "nonexistent-expert"], "unknown model alias 'nonexistent-expert'"),
    (["--worlds", "/no/such/dir"], "does not exist"),
    (["--concurrency", "0"], "must be at least 1"),
    (["--world-disk-mib", "8"], "--world-disk-mib: a scenario needs at least 16 MiB, got 8"),
    (["--world-disk-mib", "lots"], "--world-disk-mib: 'lots' is not a whole number of MiB"),
    (["--tasks", "banana"], "--tasks"),
    (["--arm", "bad arm"], "--arm"),
    (["--policy", "gpt-5.1", "--expert", "none"], "export OPENAI_API_KEY"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    proc = awm_run(*args, "--out", str(tmp_path / "x"), timeout=120)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x" / "episodes.jsonl").exists()


def test_resume_runs_only_what_is_missing(tmp_path: Path) -> None:
    out = tmp_path / "r"
    first = awm_run("--policy", "sim/oracle", "--expert", "none", "--scenarios", "tiny*,shopfront*", "--tasks", "0-1",
                    "--out", str(out), "--quiet")
    assert first.returncode == 0, first.stderr
    again = awm_run("--policy", "sim/oracle", "--expert", "none", "--scenarios", "shopfront*", "--tasks", "0-1",
                    "--out", str(out), "--quiet")
    assert again.returncode == 2 and "--resume" in again.stderr
    more = awm_run("--policy", "sim/oracle", "--expert", "none", "--scenarios", "shopfront*", "--tasks", "0-3",
                   "--out", str(out), "--resume", "--quiet")
    assert more.returncode == 0, more.stderr
    keys = [(r["scenario"], r["task_idx"]) for r in records(out)]
    assert sorted(keys) == [("shopfront_commerce", i) for i in range(4)]


def test_novice_solo_completes_clearly_less_than_with_the_expert(default_run: Any, tmp_path: Path) -> None:
    _, with_expert = default_run
    out = tmp_path / "solo"
    proc = awm_run("--expert", "none", "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    solo = records(out)
    assert all(r["expert_calls"] == 0 and r["nudges"] == 0 for r in solo)

    def rate(recs: list[dict[str, Any]]) -> float:
        return sum(r["outcome"] == "complete" for r in recs) / len(recs)

    assert rate(records(with_expert)) - rate(solo) >= 0.2, (rate(records(with_expert)), rate(solo))


def test_two_arms_are_compared_pair_by_pair(tmp_path: Path) -> None:
    out = tmp_path / "ab"
    proc = awm_run("--arm", "solo:expert=none", "--arm", "asked:expert=sim/oracle", "--scenarios", "shop*,code*",
                   "--repeats", "2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "paired comparison" in proc.stdout
    (c,) = json.loads((out / "summary.json").read_text())["paired"]
    assert (c["a"], c["b"], c["pairs"], c["tasks"]) == ("solo", "asked", 40, 20)
    assert c["completion_diff"] > 0 and c["completion_p"] < 0.05  # the expert helps the simulated novice
    # Two repeats per task: the p-value comes from the test over tasks, not from 40 "independent" pairs.
    assert c["completion_test"] == "sign-flip over tasks" and c["completion_p_holm"] == c["completion_p"]
    assert "Holm" in json.loads((out / "summary.json").read_text())["paired_method"]
    assert "sign-flip" in proc.stdout and "Holm" in proc.stdout  # the method under the table
    report = subprocess.run([sys.executable, "-c", "from awm_runtime.cli import report_main; "
                             "raise SystemExit(report_main())", str(out), "--json"],
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["paired"] == json.loads((out / "summary.json").read_text())["paired"]
