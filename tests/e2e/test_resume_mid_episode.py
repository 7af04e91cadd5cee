"""kill -9 in the middle of long episodes, then --resume: they continue from their last checkpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from awm_runtime import load_checkpoint
from tests.e2e.test_awm_run import awm_run
from tests.e2e.test_resume_shutdown import keys, records, wait_for

CMD = [sys.executable, "-c", "from awm_runtime.cli import run_main; raise SystemExit(run_main())"]


def checkpoints(out: Path) -> int:
    path = out / "checkpoints" / "index.jsonl"
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def test_kill_9_mid_episode_then_resume_continues_from_checkpoints(tmp_path: Path) -> None:
    config = tmp_path / "awm.toml"
    config.write_text('[models.slow]\nmodel = "sim/novice"\nprotocol = "native"\nmax_concurrency = 64\n'
                      "params = { sim = { latency_s = 0.3 } }\n")
    out = tmp_path / "run"
    proc = subprocess.Popen([*CMD, "--config", str(config), "--policy", "slow", "--expert", "sim/oracle",
                             "--out", str(out), "--quiet", "--checkpoint", "every", "--scenarios", "code*,home*",
                             "--tasks", "0-3", "--concurrency", "4", "--shards", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: checkpoints(out) >= 14 or proc.poll() is not None)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    recorded = {json.loads(x)["episode_id"] for x in (out / "episodes.jsonl").read_text().splitlines()} \
        if (out / "episodes.jsonl").is_file() else set()
    index = [json.loads(x) for x in (out / "checkpoints" / "index.jsonl").read_text().splitlines()]
    in_flight: dict[str, int] = {}
    for e in index:
        if e["episode_id"] not in recorded:
            in_flight[e["episode_id"]] = max(in_flight.get(e["episode_id"], -1), e["turn"])
    assert in_flight, "the kill found no episode in flight"
    killed_at = records(out)

    resumed = awm_run("--out", str(out), "--resume", "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    got = keys(out)
    assert len(got) == len(set(got)) == 8  # each record written exactly once
    after = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()][killed_at:]
    continued = [r for r in after if r.get("resumed_from")]
    assert {r["resumed_from"]["episode_id"] for r in continued} == set(in_flight)
    events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines() if x.endswith("}")]
    for r in continued:
        origin = r["resumed_from"]
        assert origin["turn"] == in_flight[origin["episode_id"]]  # the last checkpoint
        cp = load_checkpoint(origin["checkpoint"])
        n = len(cp.messages)
        assert r["messages"][:n] == [m.model_dump(mode="json") for m in cp.messages]  # the prefix, as it was
        policy_turns = sum(1 for m in r["messages"] if m["source"] == "policy")
        new_calls = sum(1 for e in events if e.get("event") == "model_called" and e.get("role") == "policy"
                        and e.get("episode_id") == r["episode_id"])
        assert new_calls == policy_turns - cp.turn  # no turn before the checkpoint was sampled again
        assert r["usage"]["policy"]["calls"] == policy_turns  # the record bills the whole episode once
        assert r.get("fork") is None
    summary = json.loads((out / "summary.json").read_text())
    assert summary["already_done"] == killed_at and summary["not_run"] == 0
    assert any(e.get("event") == "run_started" and e.get("resumed_mid_episode") == len(in_flight) for e in events)
