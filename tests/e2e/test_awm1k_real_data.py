"""The real AgentWorldModel-1K extract and `--worlds awm-1k`, as a user runs them: subprocesses (see below).

`--worlds awm-1k` downloads from a loopback server that answers as the Hub's API and resolve endpoints
do (awm_runtime.testing.FakeHub); every test process gets HF_ENDPOINT pointing at it, or at a closed
port, and its own HF_HOME: the network is never touched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.testing import FakeHub

# Subprocesses, not tests/e2e/_inproc.py: huggingface_hub reads HF_HOME, HF_ENDPOINT and HF_HUB_OFFLINE when it is
# first imported, so each setting needs a process of its own.
from tests.e2e.test_awm_run import awm_run_subprocess as awm_run
from tests.e2e.test_awm_run import records
from tests.e2e.test_awm_worlds import awm_worlds_subprocess as awm_worlds

SAMPLES = Path(__file__).parents[1] / "fixtures" / "awm1k_samples"
REPO = "Snowflake/AgentWorldModel-1K"
NOWHERE = "http://127.0.0.1:9"  # the discard port: nothing listens, a request fails at once


def hf_env(home: Path, endpoint: str = NOWHERE, **extra: str) -> dict[str, str]:
    return {"HF_HOME": str(home), "HF_ENDPOINT": endpoint, "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_PROGRESS_BARS": "1", **extra}


@pytest.fixture(scope="module")
def check_report() -> dict[str, Any]:
    proc = awm_worlds("check", "--worlds", str(SAMPLES), "--json", env=hf_env(Path("/nonexistent")))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_check_says_what_can_run_and_why_the_rest_cannot(check_report: dict[str, Any]) -> None:
    why = {s["scenario"]: (s["loads"], s["tools"], s["why_not"]) for s in check_report["scenarios"]}
    lacking = "no usable row in gen_envs.jsonl, gen_db.jsonl, gen_sample.jsonl, gen_tasks.jsonl"
    assert why == {
        "content_platform_1": (True, 34, None),
        "e_commerce_33": (False, None, "no usable row in gen_envs.jsonl"),
        "code_hosting_2": (False, None, "no usable row in gen_sample.jsonl"),
        "communication_messaging_1": (False, None, "no usable row in gen_db.jsonl, gen_tasks.jsonl"),
        "marketplace_1": (False, None, lacking),
        "booking_marketplace_1": (False, None, lacking),
        "booking_and_appointments_1": (False, None, lacking),
    }
    assert check_report["summary"] == {"scenarios": 7, "runnable_scenarios": 1, "loading_scenarios": 1, "tasks": 10,
                                       "loads": 10, "unverifiable": 10, "trivial": 0, "reference_checked": 0,
                                       "reference_passes": 0, "with_errors": 0}
    assert {t["verifier"] for t in check_report["tasks"]} == {"no verifier row"}
    assert {"file": "gen_verifier.jsonl", "line": None, "scenario": "e_commerce_33", "task_idx": 2,
            "message": "verifier code does not parse: closing parenthesis ']' does not match opening parenthesis "
                       "'{' on line 172 (line 174)"} in check_report["problems"]
    assert {"file": "gen_scenario.jsonl", "line": None, "scenario": "content_platform_1", "task_idx": None,
            "message": "no row: runs without a description"} in check_report["problems"]


def test_awm_run_plays_content_platform_1_and_an_unverifiable_task_runs_unverified(tmp_path: Path) -> None:
    solutions = tmp_path / "solutions.json"  # task 0 through a real tool of the real app
    solutions.write_text(json.dumps([{"scenario": "content_platform_1", "task_idx": 0,
                                      "steps": [{"tool": "search_channels", "arguments": {"query": "Kurzgesagt"}}],
                                      "final_answer": "Found it."}]))
    out = tmp_path / "run"
    proc = awm_run("--worlds", str(SAMPLES), "--solutions", str(solutions), "--tasks", "0-1", "--policy",
                   "sim/oracle", "--expert", "none", "--out", str(out), "--json", env=hf_env(Path("/nonexistent")))
    assert proc.returncode == 0, proc.stderr
    recs = {r["task_idx"]: r for r in records(out)}
    assert set(recs) == {0, 1} and all(r["scenario"] == "content_platform_1" for r in recs.values())
    # Unverified episodes cannot be scored: they leave the statistics as `unverified`, neither the agent's
    # failure nor an infrastructure error (issue 25).
    assert all(r["verdict"] == "no_verifier" and r["outcome"] == "unverified" and r["end_reason"] == "no_verifier"
               for r in recs.values())
    assert recs[0]["tool_calls"] == 1 and recs[0]["tool_errors"] == 0 and recs[1]["tool_calls"] == 0
    result = next(m for m in recs[0]["messages"] if m["role"] == "tool")
    assert "Kurzgesagt" in result["content"]
    assert "tasks_without_verifier" in proc.stderr  # said before the run starts, with what the dataset lacks
    assert "worlds_problems" in proc.stderr and "scenarios_that_cannot_run=6" in proc.stderr
    assert "`awm-worlds check --worlds " in proc.stderr
    skipped = awm_run("--worlds", str(SAMPLES), "--tasks", "0-1", "--policy", "sim/oracle", "--expert", "none",
                      "--unverified", "skip", "--out", str(tmp_path / "skip"), "--quiet",
                      env=hf_env(Path("/nonexistent")))
    assert skipped.returncode == 2
    assert skipped.stderr.strip().splitlines()[-1] == (
        "awm-run: error: --unverified skip: none of the 2 selected tasks has a usable code-mode verifier")


def test_awm_1k_downloads_once_into_the_hub_cache_and_honours_offline_mode(tmp_path: Path) -> None:
    home = tmp_path / "hf"
    with FakeHub(SAMPLES, REPO, lifetime_s=240) as hub:
        first = awm_worlds("list", "--worlds", "awm-1k", "--json", env=hf_env(home, hub.url))
        assert first.returncode == 0, first.stderr
        listing = json.loads(first.stdout)
        snapshot = home / "hub" / "datasets--Snowflake--AgentWorldModel-1K" / "snapshots" / hub.commit
        assert Path(listing["worlds"]) == snapshot and len(listing["scenarios"]) == 7
        assert f"downloading {REPO} (main) from {hub.url}" in first.stderr
        files = sorted(p.name for p in SAMPLES.glob("gen_*.jsonl"))
        assert sorted(p.name for p in snapshot.iterdir()) == files  # the data files, not SOURCE.md
        assert all((snapshot / f).read_bytes() == (SAMPLES / f).read_bytes() for f in files)
        assert hub.file_requests() == 2 * len(files)  # a HEAD and a GET each
        fetched = sum(hub.requests.values())

        again = awm_worlds("list", "--worlds", "awm-1k", "--json", env=hf_env(home, hub.url))
        offline = awm_worlds("list", "--worlds", "awm-1k", "--json", env=hf_env(home, hub.url, HF_HUB_OFFLINE="1"))
        pinned = awm_worlds("list", "--worlds", f"awm-1k@{hub.commit}", "--json", env=hf_env(home, hub.url))
        assert [p.returncode for p in (again, offline, pinned)] == [0, 0, 0]
        assert json.loads(again.stdout) == json.loads(offline.stdout) == listing
        assert sum(hub.requests.values()) == fetched  # cached: no request at all, online or not

        out = tmp_path / "run"
        run = awm_run("--worlds", "awm-1k", "--tasks", "0", "--policy", "sim/oracle", "--expert", "none", "--out",
                      str(out), "--quiet", env=hf_env(home, hub.url, HF_HUB_OFFLINE="1"))
        assert run.returncode == 0, run.stderr
        manifest = json.loads((out / "manifest.json").read_text())
        assert (manifest["worlds"], manifest["worlds_revision"]) == ("awm-1k", hub.commit)
        assert [r["scenario"] for r in records(out)] == ["content_platform_1"]

        empty = awm_worlds("list", "--worlds", "awm-1k", env=hf_env(tmp_path / "empty", hub.url, HF_HUB_OFFLINE="1"))
        bad_rev = awm_worlds("list", "--worlds", "awm-1k@no-such-branch", env=hf_env(tmp_path / "empty2", hub.url))
        assert sum(hub.requests.values()) == fetched + 1  # only bad_rev asked (and was refused)
    assert (empty.returncode, bad_rev.returncode) == (2, 2)
    assert empty.stderr.strip() == (
        f"awm-worlds: error: --worlds awm-1k: {REPO} (main) is not in the Hugging Face cache "
        f"({tmp_path / 'empty' / 'hub'}) and HF_HUB_OFFLINE is set: run once online, or unset it")
    assert bad_rev.stderr.strip().splitlines()[-1].startswith(
        f"awm-worlds: error: --worlds awm-1k@no-such-branch: cannot download {REPO} (no-such-branch) from {hub.url}: "
        "RevisionNotFoundError")
