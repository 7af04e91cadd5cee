"""awm-run --ray against a real two-node Ray cluster on loopback, with the model on loopback too.

One cluster (a head and one worker node, one CPU each) serves the whole module; the last test
kills the worker node, so it stays last. The driver runs without the model key: the nodes have it
in their own environment, which is the only way a key reaches an episode actor.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")

from awm_runtime.testing import FakeOpenAI, LoopbackRayCluster, sim_responder, teach_builtin

KEY = "ray-loop-key-7f3a9c2e"
LIMIT = 2  # the alias's max_concurrency, which must hold across both nodes
CMD = [sys.executable, "-c", "from awm_runtime.cli import run_main; raise SystemExit(run_main())"]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    teach_builtin()
    inner = sim_responder("oracle")

    def slow(request: dict[str, Any]) -> Any:
        reply = inner(request)
        reply.delay_s = 0.15  # long enough that both nodes' calls overlap at the server
        return reply

    with FakeOpenAI(key=KEY, models=("oracle-7b",), responder=slow, max_lifetime_s=900) as s:
        yield s


@pytest.fixture(scope="module")
def cluster() -> Iterator[LoopbackRayCluster]:
    with LoopbackRayCluster(workers=1, cpus=1, node_env={"RAY_LOOP_KEY": KEY}) as c:
        yield c
    assert c.alive_pids() == [], "a process of the test cluster outlived it"


def config(tmp_path: Path, server: FakeOpenAI, key_env: str = "RAY_LOOP_KEY") -> Path:
    path = tmp_path / "awm.toml"
    path.write_text(f'[models.loop]\nmodel = "openai/oracle-7b"\napi_base = "{server.url}"\n'
                    f'api_key_env = "{key_env}"\nprotocol = "native"\nmax_concurrency = {LIMIT}\n')
    return path


def driver_env(cluster: LoopbackRayCluster) -> dict[str, str]:
    env = cluster.client_env()
    env.pop("RAY_LOOP_KEY", None)  # the driver has no key: only the nodes do
    return env


def awm_run(cluster: LoopbackRayCluster, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CMD, "--ray", cluster.address, *args], capture_output=True, text=True, timeout=timeout,
                          env=driver_env(cluster))


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]


def keys(recs: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["arm"], r["scenario"], r["task_idx"], r["repeat"]) for r in recs]


def grep_tree(root: Path, needle: str) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                if needle.encode() in path.read_bytes():
                    hits.append(str(path))
            except OSError:
                continue
    return hits


def test_episodes_run_on_both_nodes_once_each_within_the_alias_limit(
        tmp_path: Path, server: FakeOpenAI, cluster: LoopbackRayCluster) -> None:
    out = tmp_path / "run"
    server.max_in_flight = 0
    proc = awm_run(cluster, "--config", str(config(tmp_path, server)), "--policy", "loop", "--expert", "none",
                   "--tasks", "0-2", "--concurrency", "8", "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    planned = json.loads((out / "summary.json").read_text())["planned"]
    assert planned == 18 and len(recs) == planned and len(set(keys(recs))) == planned
    assert all(r["outcome"] == "complete" for r in recs), [r["error"] for r in recs if r["error"]]
    nodes = {r["worker"]["node"] for r in recs}
    assert len(nodes) == 2 and all(r["worker"]["pid"] > 0 for r in recs)
    # Each node alone would allow LIMIT calls at once; together they must not exceed it, and do reach it.
    assert server.max_in_flight == LIMIT
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ray"]["nodes"] == 2 and not any(a["lost"] for a in summary["ray"]["actors"])
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert {e.get("actor") for e in events if e["event"] == "episode_ended"} == {0, 1}
    # every record's tool set is in tools.jsonl once, though each actor ran episodes on the same sets
    sets = [json.loads(line)["tools_id"] for line in (out / "tools.jsonl").read_text().splitlines()]
    assert len(sets) == len(set(sets)) and {r["tools_id"] for r in recs} == set(sets) and None not in sets
    assert grep_tree(out, KEY) == [] and grep_tree(out, cluster.token) == []  # no key, no cluster token ...
    assert grep_tree(cluster.tmp, KEY) == []  # ... nor do Ray's logs, object spill files or session files


def test_a_node_without_the_key_fails_before_any_episode(
        tmp_path: Path, server: FakeOpenAI, cluster: LoopbackRayCluster) -> None:
    out = tmp_path / "run"
    proc = awm_run(cluster, "--config", str(config(tmp_path, server, key_env="RAY_ABSENT_KEY")), "--policy", "loop",
                   "--expert", "none", "--tasks", "0", "--out", str(out), "--quiet")
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "node 127.0.0.2" in line and "RAY_ABSENT_KEY" in line
    assert not (out / "episodes.jsonl").is_file() or records(out) == []


def test_bad_addresses_fail_fast_with_one_line(tmp_path: Path) -> None:
    started = time.monotonic()
    proc = subprocess.run([*CMD, "--ray", "127.0.0.2:1", "--out", str(tmp_path / "a")], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "no Ray cluster answers there" in proc.stderr
    assert time.monotonic() - started < 60
    proc = subprocess.run([*CMD, "--ray", "ray://127.0.0.2:10001", "--out", str(tmp_path / "b")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Ray Client" in proc.stderr


def test_sigterm_stops_the_cluster_run_gracefully_and_resume_completes_it(
        tmp_path: Path, server: FakeOpenAI, cluster: LoopbackRayCluster) -> None:
    out = tmp_path / "run"
    args = ["--config", str(config(tmp_path, server)), "--policy", "loop", "--expert", "none", "--tasks", "0-3",
            "--concurrency", "4", "--grace", "20", "--out", str(out), "--quiet"]
    driver = subprocess.Popen([*CMD, "--ray", cluster.address, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=driver_env(cluster))
    try:
        deadline = time.monotonic() + 300
        while len(_finished(out)) < 2:
            assert driver.poll() is None and time.monotonic() < deadline, driver.communicate()[1][-3000:]
            time.sleep(0.2)
        driver.send_signal(signal.SIGTERM)  # ray.init replaces the SIGTERM handler; the run must keep ours
        _, stderr = driver.communicate(timeout=120)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 130, stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] and summary["stop_reason"] == "SIGTERM" and summary["not_run"] > 0
    first = len(records(out))
    assert first == summary["recorded"] < 24
    resumed = awm_run(cluster, "--out", str(out), "--resume", "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    recs = records(out)
    assert len(recs) == 24 and len(set(keys(recs))) == 24
    assert all(r["outcome"] == "complete" for r in recs), [r["error"] for r in recs if r["error"]][:3]


def test_killing_the_worker_node_loses_nothing_after_resume(
        tmp_path: Path, server: FakeOpenAI, cluster: LoopbackRayCluster) -> None:
    """Keep last: the worker node does not come back."""
    out = tmp_path / "run"
    server.max_in_flight = 0
    args = ["--config", str(config(tmp_path, server)), "--policy", "loop", "--expert", "none", "--tasks", "0-4",
            "--concurrency", "8", "--out", str(out), "--quiet"]
    driver = subprocess.Popen([*CMD, "--ray", cluster.address, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=driver_env(cluster))
    try:
        deadline = time.monotonic() + 300
        while len({r["worker"]["node"] for r in _finished(out)}) < 2:  # both nodes have recorded episodes
            assert driver.poll() is None and time.monotonic() < deadline, driver.communicate()[1][-3000:]
            time.sleep(0.2)
        cluster.kill_node(1)
        _, stderr = driver.communicate(timeout=600)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode in (0, 130), stderr
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert any(e["event"] == "actor_lost" for e in events)
    resumed = awm_run(cluster, "--out", str(out), "--resume", "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    recs = records(out)
    assert len(recs) == 30 and len(set(keys(recs))) == 30  # every key once: nothing lost, nothing twice
    assert all(r["outcome"] == "complete" for r in recs), [r["error"] for r in recs if r["error"]][:3]
    assert len({r["worker"]["node"] for r in recs}) == 2
    assert server.max_in_flight <= LIMIT


def _finished(out: Path) -> list[dict[str, Any]]:
    path = out / "episodes.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
