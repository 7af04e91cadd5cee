"""awm-worlds check and awm-run --exclude-trivial as a user runs them (in process) on a hostile dataset."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.testing import FakeOpenAI, Reply
from tests.awm_runtime.worlds.trap_data import write_trap_dataset
from tests.e2e._inproc import Result, run_cli
from tests.e2e.test_awm_run import awm_run, records


def awm_worlds(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> Result:
    """awm-worlds, in process (tests/e2e/_inproc.py): these tests are about its report, not its process."""
    return run_cli("worlds", *args, env=env, timeout=timeout)


def awm_worlds_subprocess(*args: str, env: dict[str, str] | None = None,
                          timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """awm-worlds in its own process: for settings read once per process (huggingface_hub's environment)."""
    cmd = [sys.executable, "-c", "from awm_runtime.cli import worlds_main; raise SystemExit(worlds_main())", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def trap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_trap_dataset(tmp_path_factory.mktemp("trap_e2e"))


@pytest.fixture(scope="module")
def check_report(trap: Path) -> dict[str, Any]:
    proc = awm_worlds("check", "--worlds", str(trap), "--json", "--tool-timeout", "2")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def by_key(report: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(t["scenario"], t["task_idx"]): t for t in report["tasks"]}


def test_check_reports_every_task(check_report: dict[str, Any]) -> None:
    tasks = by_key(check_report)
    assert set(tasks) == {("trap", i) for i in range(6)} | {("broken_import", 0)}
    for t in tasks.values():
        assert set(t) == {"scenario", "task_idx", "loads", "noop_passes", "reference_passes", "errors", "verifier"}
        assert t["verifier"] is None
    assert tasks[("trap", 0)] | {"errors": []} == {"scenario": "trap", "task_idx": 0, "loads": True,
                                                   "noop_passes": False, "reference_passes": True, "errors": [],
                                                   "verifier": None}
    assert tasks[("trap", 1)]["noop_passes"] is True  # trivial: passes with no actions at all
    assert tasks[("trap", 2)]["noop_passes"] is None
    assert any("ZeroDivisionError" in e and "scenario trap task 2" in e for e in tasks[("trap", 2)]["errors"])
    assert any("did not finish within 2s" in e for e in tasks[("trap", 3)]["errors"])
    assert any("worker died (exit code 7)" in e for e in tasks[("trap", 4)]["errors"])
    broken = tasks[("broken_import", 0)]
    assert broken["loads"] is False and "nonexistent_module_xyz" in broken["errors"][0]
    assert check_report["summary"] == {"scenarios": 2, "runnable_scenarios": 2, "loading_scenarios": 1, "tasks": 7,
                                       "loads": 6, "unverifiable": 0, "trivial": 1, "reference_checked": 2,
                                       "reference_passes": 2, "with_errors": 5}
    broken_scenario = next(s for s in check_report["scenarios"] if s["scenario"] == "broken_import")
    assert broken_scenario["runnable"] and not broken_scenario["loads"]
    assert "nonexistent_module_xyz" in broken_scenario["why_not"]


def test_check_reports_data_problems_with_file_and_line(check_report: dict[str, Any]) -> None:
    problems = check_report["problems"]
    assert {"file": "gen_tasks.jsonl", "line": 3, "scenario": "?", "task_idx": None,
            "message": "not valid JSON (Expecting property name enclosed in double quotes)"} in problems
    assert any(p["file"] == "gen_sample.jsonl" and "nowhere" in p["message"] for p in problems)
    assert any(p["file"] == "gen_envs.jsonl" and p["scenario"] == "broken_import" for p in problems)


def test_check_json_is_stable(trap: Path) -> None:
    runs = [awm_worlds("check", "--worlds", str(trap), "--json", "--scenarios", "trap", "--tasks", "0,1")
            for _ in range(2)]
    assert all(r.returncode == 0 for r in runs)
    assert runs[0].stdout == runs[1].stdout


def test_run_excludes_trivial_tasks_and_survives_a_world_crash(trap: Path, tmp_path: Path) -> None:
    env = {"AWM_CACHE_DIR": str(tmp_path / "cache")}
    for attempt in ("computed", "cached"):
        out = tmp_path / f"run-{attempt}"
        proc = awm_run("--worlds", str(trap), "--scenarios", "trap", "--tasks", "0,1,4", "--policy", "sim/oracle",
                       "--expert", "none", "--exclude-trivial", "--out", str(out), "--quiet", env=env)
        assert proc.returncode == 0, proc.stderr
        recs = {r["task_idx"]: r for r in records(out)}
        assert set(recs) == {0, 4}  # task 1 passes with no actions: excluded
        assert recs[0]["outcome"] == "complete"
        assert recs[4]["outcome"] == "error" and recs[4]["error"]["class"] == "WorldError"
        assert "worker died" in recs[4]["error"]["message"]
    assert len(list((tmp_path / "cache" / "trivial").glob("*.json"))) == 1


def test_sql_mode_needs_a_judge(trap: Path, tmp_path: Path) -> None:
    proc = awm_run("--worlds", str(trap), "--verifier", "sql", "--out", str(tmp_path / "x"), "--quiet")
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("awm-run: error: --verifier sql needs --judge ALIAS: the model that classifies "
                                   "each episode")


def test_check_in_sql_mode_with_a_loopback_judge(trap: Path, tmp_path: Path) -> None:
    verdict = Reply(content='{"classification": "incomplete", "reason": "nothing changed"}')
    with FakeOpenAI(key="judge-key-7", models=("judge-7b",), default=verdict, max_lifetime_s=240) as server:
        config = tmp_path / "awm.toml"
        config.write_text(f'[models.loop-judge]\nmodel = "openai/judge-7b"\napi_base = "{server.url}"\n'
                          'api_key_env = "LOOP_JUDGE_KEY"\n')
        proc = awm_worlds("check", "--worlds", str(trap), "--json", "--scenarios", "trap", "--tasks", "0",
                          "--verifier", "sql", "--judge", "loop-judge", "--config", str(config),
                          env={"LOOP_JUDGE_KEY": "judge-key-7"})
    assert proc.returncode == 0, proc.stderr
    task = json.loads(proc.stdout)["tasks"][0]
    assert task["noop_passes"] is False and task["reference_passes"] is False and task["errors"] == []
    assert len([r for r in server.requests if "<<<EPISODE-DATA" in json.dumps(r)]) == 2
    assert "judge-key-7" not in proc.stdout + proc.stderr


def test_run_in_sql_mode_judges_on_the_judge_role(tmp_path: Path) -> None:
    verdict = Reply(content='{"classification": "complete", "reason": "the evidence shows it"}')
    with FakeOpenAI(key="judge-key-8", models=("judge-7b",), default=verdict, max_lifetime_s=240) as server:
        config = tmp_path / "awm.toml"
        config.write_text(f'[models.loop-judge]\nmodel = "openai/judge-7b"\napi_base = "{server.url}"\n'
                          'api_key_env = "LOOP_JUDGE_KEY"\n')
        out = tmp_path / "run"
        proc = awm_run("--scenarios", "homehub*", "--tasks", "0-1", "--policy", "sim/oracle", "--expert", "none",
                       "--verifier", "sql", "--judge", "loop-judge", "--config", str(config), "--out", str(out),
                       "--quiet", env={"LOOP_JUDGE_KEY": "judge-key-8"})
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) == 2 and all(r["outcome"] == "complete" and r["verdict"] == "complete" for r in recs)
    assert all(r["verdict_detail"]["mode"] == "sql" for r in recs)
    assert all(r["verdict_detail"]["returned"]["reason"] == "the evidence shows it" for r in recs)
    judged = [r for r in server.requests if r["messages"][0]["content"].startswith("You judge whether")]
    assert len(judged) == 2 and all(r["_auth"] == "Bearer judge-key-8" for r in judged)
    assert "judge-key-8" not in "".join(p.read_text() for p in out.iterdir() if p.is_file())


def test_check_rejects_a_bad_disk_quota_in_one_line() -> None:
    proc = awm_worlds("check", "--world-disk-mib", "-1", timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("awm-worlds check: error: argument --world-disk-mib: a scenario needs at least "
                                   "16 MiB, got -1 (see awm-worlds check --help)")
