"""awm-run killed, interrupted and resumed as a user would: real signals to a real subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_awm_run import awm_run
from tests.procs import alive

CMD = [sys.executable, "-c", "from awm_runtime.cli import run_main; raise SystemExit(run_main())"]


def slow_config(tmp_path: Path, latency_s: float) -> Path:
    path = tmp_path / "awm.toml"
    path.write_text(f'[models.slow]\nmodel = "sim/oracle"\nprotocol = "native"\nmax_concurrency = 64\n'
                    f"params = {{ sim = {{ latency_s = {latency_s} }} }}\n")
    return path


def start(tmp_path: Path, out: Path, *args: str, latency_s: float = 0.4) -> subprocess.Popen[str]:
    return subprocess.Popen([*CMD, "--config", str(slow_config(tmp_path, latency_s)), "--policy", "slow",
                             "--expert", "none", "--out", str(out), "--quiet", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def records(out: Path) -> int:
    path = out / "episodes.jsonl"
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def wait_for(predicate: Any, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not reached")
        time.sleep(0.1)


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.is_file() else b""


def keys(out: Path) -> list[tuple[Any, ...]]:
    return [(r["arm"], r["scenario"], r["task_idx"], r["repeat"])
            for r in map(json.loads, (out / "episodes.jsonl").read_text().splitlines())]


@pytest.mark.parametrize("shards", ["1", "2"])
def test_kill_9_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path: Path, shards: str) -> None:
    out = tmp_path / "run"
    proc = start(tmp_path, out, "--scenarios", "shop*,home*,code*", "--repeats", "2", "--concurrency", "8",
                 "--shards", shards)
    try:
        wait_for(lambda: records(out) >= 6 or proc.poll() is not None)
        time.sleep(1.5)  # let the events of the shards reach events.jsonl
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    killed_at = records(out)
    assert 6 <= killed_at < 60
    events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines() if x.endswith("}")]
    for pid in [e["pid"] for e in events if e["event"] == "shard_started"]:
        wait_for(lambda pid=pid: not alive(pid), timeout=30)  # shards die with their parent
    with (out / "episodes.jsonl").open("ab") as fh:  # and a torn final write, as a crash mid-append leaves
        fh.write(b'{"episode_id": "torn", "arm": "main", "scen')

    resumed = awm_run("--out", str(out), "--resume", "--quiet")  # the manifest supplies every other flag
    assert resumed.returncode == 0, resumed.stderr
    got = keys(out)
    assert len(got) == len(set(got)) == 60
    summary = json.loads((out / "summary.json").read_text())
    assert summary["already_done"] == killed_at and summary["not_run"] == 0 and summary["episodes"] == 60


def test_sigint_lets_in_flight_episodes_finish_prints_the_summary_and_resume_completes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = start(tmp_path, out, "--scenarios", "shop*,home*", "--repeats", "2", "--concurrency", "4",
                 "--grace", "120", "--shards", "1")
    wait_for(lambda: records(out) >= 2 or proc.poll() is not None)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 130, stderr
    assert "awm-run summary" in stdout and "--resume" in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] and summary["stop_reason"] == "SIGINT"
    assert summary["cancelled"] == 0 and summary["not_run"] > 0  # in-flight ones finished, none started after
    assert summary["recorded"] == records(out) and summary["recorded"] + summary["not_run"] == 40
    names = [json.loads(x)["event"] for x in (out / "events.jsonl").read_text().splitlines()]
    assert names[-1] == "run_finished"

    resumed = awm_run("--out", str(out), "--resume", "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(keys(out)) == sorted(set(keys(out))) and len(keys(out)) == 40


@pytest.mark.parametrize("shards", ["1", "2"])
def test_sigterm_past_the_grace_cancels_in_flight_episodes_and_records_them_as_not_run(
        tmp_path: Path, shards: str) -> None:
    out = tmp_path / "run"
    proc = start(tmp_path, out, "--scenarios", "shop*", "--repeats", "4", "--concurrency", "6", "--grace", "0.2",
                 "--shards", shards, latency_s=3.0)
    wait_for(lambda: b"episode_started" in _read(out / "events.jsonl") or proc.poll() is not None)
    time.sleep(1)  # episodes are mid-flight (3 s per model reply)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cancelled"] >= 1 and summary["recorded"] + summary["not_run"] == 40
    assert summary["recorded"] == records(out)
    events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
    assert sum(1 for e in events if e["event"] == "episode_cancelled") == summary["cancelled"]
    assert "awm-run summary" in stdout


def test_log_stdout_streams_the_events_while_the_summary_still_lands(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = awm_run("--policy", "sim/oracle", "--expert", "none", "--scenarios", "shop*", "--tasks", "0-1",
                   "--out", str(out), "--quiet", "--log-stdout")
    assert proc.returncode == 0, proc.stderr
    streamed = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith('{"')]
    assert [e["event"] for e in streamed] == [json.loads(x)["event"] for x in
                                              (out / "events.jsonl").read_text().splitlines()]
    assert {"run_started", "model_called", "episode_ended", "run_finished"} <= {e["event"] for e in streamed}
    assert "awm-run summary" in proc.stdout
