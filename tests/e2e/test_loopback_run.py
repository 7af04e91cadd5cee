"""awm-run against a model on loopback: the real litellm/HTTP path, with the server playing the model."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from awm_runtime.testing import FakeOpenAI, Reply, sim_responder, teach_builtin
from tests.e2e.test_awm_run import awm_run, records


def test_policy_on_loopback_endpoint_completes_tasks(tmp_path: Path) -> None:
    teach_builtin()
    with FakeOpenAI(key="loop-key-0001", models=("oracle-7b",), responder=sim_responder("oracle"),
                    max_lifetime_s=240) as server:
        config = tmp_path / "awm.toml"
        config.write_text(f"""
[models.loop]
model = "openai/oracle-7b"
api_base = "{server.url}"
api_key_env = "LOOP_KEY"
protocol = "native"
max_concurrency = 8
""")
        out = tmp_path / "run"
        proc = awm_run("--config", str(config), "--policy", "loop", "--expert", "none", "--scenarios", "homehub*",
                       "--out", str(out), "--quiet", env={"LOOP_KEY": "loop-key-0001"})
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) == 10 and all(r["outcome"] == "complete" for r in recs)
    assert all(r["policy"]["model"] == "openai/oracle-7b" and r["policy"]["simulated"] is False for r in recs)
    assert len(server.requests) >= sum(r["turns"] for r in recs)
    run_files = "".join(p.read_text() for p in out.iterdir() if p.is_file())
    assert "loop-key-0001" not in run_files
    assert json.loads((out / "summary.json").read_text())["arms"]["main"]["completion_rate"] == 1.0


def test_a_one_slot_endpoint_queues_episodes_without_infrastructure_errors(tmp_path: Path) -> None:
    """Issue 32: 10 episodes at --concurrency 10 on an endpoint that serves one call at a time, with a
    deadline per call and per episode far below what the whole queue takes. The scheduler starts only
    what the endpoint can serve (and says so); the calls' deadlines start when they are sent."""
    teach_builtin()
    oracle = sim_responder("oracle")

    def slow(request: dict[str, object]) -> Reply:
        return replace(oracle(request), delay_s=0.25)

    with FakeOpenAI(key="loop-key-0001", models=("oracle-7b",), responder=slow, max_lifetime_s=240) as server:
        config = tmp_path / "awm.toml"
        config.write_text(f"""
[models.loop]
model = "openai/oracle-7b"
api_base = "{server.url}"
api_key_env = "LOOP_KEY"
protocol = "native"
max_concurrency = 1
timeout_s = 2
retry_deadline_s = 3
""")
        out = tmp_path / "run"
        proc = awm_run("--config", str(config), "--policy", "loop", "--expert", "none", "--scenarios", "homehub*",
                       "--concurrency", "10", "--episode-timeout", "6", "--preflight", "quick", "--out", str(out),
                       "--quiet", env={"LOOP_KEY": "loop-key-0001"})
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) == 10 and all(r["outcome"] == "complete" for r in recs), [
        (r["outcome"], r["end_reason"], r.get("error")) for r in recs]
    calls = sum(r["usage"]["policy"]["calls"] for r in recs)
    assert calls * 0.25 > 6  # the whole queue is longer than one episode's deadline
    assert server.max_in_flight == 1
    assert "at most 2 episodes of arm main in flight (not --concurrency 10)" in proc.stderr
