"""awm-run against a model on loopback: the real litellm/HTTP path, with the server playing the model."""

from __future__ import annotations

import json
from pathlib import Path

from awm_runtime.testing import FakeOpenAI, sim_responder, teach_builtin
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
