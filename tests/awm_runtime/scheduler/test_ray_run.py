"""A run on a real (one-node, loopback) Ray cluster, driven from this process: the driver plans, feeds and
records; an actor runs the episodes. tests/e2e/test_ray_run.py drives `awm-run --ray` over two nodes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")

from awm_runtime import ConfigError, RunConfig
from awm_runtime.scheduler import prepare, run
from awm_runtime.testing import LoopbackRayCluster
from tests.awm_runtime.scheduler.test_run import keys

CMD = [sys.executable, "-c", "from awm_runtime.cli import run_main; raise SystemExit(run_main())"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[LoopbackRayCluster]:
    with LoopbackRayCluster(workers=0, cpus=1) as c:
        yield c
    assert c.alive_pids() == [], "a process of the test cluster outlived it"


def awm_run(cluster: LoopbackRayCluster, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The driver in its own process (Ray reads its token when it is imported); coverage follows it there."""
    return subprocess.run([*CMD, "--ray", cluster.address, "--worlds", "builtin", "--policy", "sim/oracle",
                           "--expert", "none", "--scenarios", "shop*", "--tasks", "0,1", "--repeats", "2",
                           "--concurrency", "2", "--out", str(out), "--json", *args], capture_output=True,
                          text=True, timeout=300, env=cluster.client_env())


def test_a_ray_run_records_every_episode_once_and_says_what_its_actors_did(
        cluster: LoopbackRayCluster, tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = awm_run(cluster, out)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    got = keys(out)
    assert summary["recorded"] == summary["planned"] == len(got) == len(set(got)) == 4
    ray = summary["ray"]
    assert ray["address"] == cluster.address and ray["nodes"] == 1
    assert [a["lost"] for a in ray["actors"]] == [False] * len(ray["actors"]) and summary["shards"] >= 1
    events = [json.loads(x)["event"] for x in (out / "events.jsonl").read_text().splitlines()]
    assert "ray_started" in events and "ray_finished" in events

    again = awm_run(cluster, out, "--resume")  # nothing left: a set difference
    assert again.returncode == 0, again.stderr[-2000:]
    resumed = json.loads(again.stdout)
    assert resumed["already_done"] == 4 and resumed["recorded"] == 0 and resumed["run_id"] == summary["run_id"]


def test_a_node_that_lacks_a_key_ends_the_run_before_any_episode(cluster: LoopbackRayCluster, tmp_path: Path) -> None:
    """The driver runs no episode, so it checks no key: each actor checks its own node's, and says which."""
    toml = tmp_path / "awm.toml"
    toml.write_text('[models.served]\nmodel = "openai/served"\napi_base = "http://127.0.0.1:9/v1"\n'
                    'api_key_env = "RAY_ABSENT_KEY"\nprotocol = "native"\n')
    out = tmp_path / "run"
    done = awm_run(cluster, out, "--config", str(toml), "--policy", "served", "--quiet")
    assert done.returncode == 2, done.stderr[-2000:]
    line = done.stderr.strip().splitlines()[-1]
    assert "--ray: node " in line and "RAY_ABSENT_KEY" in line
    assert not (out / "episodes.jsonl").is_file() or (out / "episodes.jsonl").read_text() == ""


async def test_a_ray_run_refuses_what_it_cannot_play_before_any_episode(tmp_path: Path) -> None:
    config = RunConfig(worlds="builtin", policy="sim/oracle", expert="none", scenarios="shop*", tasks="0",
                       out=tmp_path / "a", ray="127.0.0.2:1", preflight="off")
    with pytest.raises(ConfigError, match="--checkpoint needs the run's episodes on this machine"):
        await prepare(config.model_copy(update={"checkpoint": "every"}))
    with pytest.raises(ConfigError, match="no Ray cluster answers there"):
        await run(config)


def test_an_actor_killed_mid_run_is_lost_and_the_run_stops_for_resume(cluster: LoopbackRayCluster,
                                                                       tmp_path: Path) -> None:
    """The run's only actor dies with episodes in flight: they are not recorded, its leases go back, and the
    run stops (nothing is left to run them) with the command that continues it."""
    toml = tmp_path / "awm.toml"
    toml.write_text('[models.slow]\nmodel = "sim/oracle"\nprotocol = "native"\n'
                    "params = { sim = { latency_s = 1.0 } }\n")
    out = tmp_path / "run"
    args = [*CMD, "--ray", cluster.address, "--worlds", "builtin", "--policy", "slow", "--expert", "none",
            "--config", str(toml), "--scenarios", "shop*", "--tasks", "0,1", "--repeats", "4", "--concurrency", "2",
            "--out", str(out), "--quiet"]
    driver = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=cluster.client_env())
    try:
        started: list[dict[str, Any]] = []
        deadline = time.monotonic() + 240
        while not started and time.monotonic() < deadline and driver.poll() is None:
            time.sleep(0.2)
            text = (out / "events.jsonl").read_text() if (out / "events.jsonl").is_file() else ""
            started = [e for e in map(json.loads, text.splitlines()) if e["event"] == "ray_started"]
        assert started, driver.stderr.read() if driver.poll() is not None else "no ray_started"
        time.sleep(1.5)  # episodes in flight on the actor
        os.kill(int(started[0]["actors"][0]["pid"]), signal.SIGKILL)
        _, err = driver.communicate(timeout=240)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    assert driver.returncode == 130, err[-2000:]
    assert "--resume" in err
    events = [json.loads(x)["event"] for x in (out / "events.jsonl").read_text().splitlines()]
    assert "actor_lost" in events
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stop_reason"] == "ray_actors_lost" and summary["recorded"] < summary["planned"] == 8
