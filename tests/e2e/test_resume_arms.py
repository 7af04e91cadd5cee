"""A resume cannot change what an arm means: awm-run as a user runs it, against loopback models.

A redefined alias or a flag that changes an arm is refused (exit 2, one line, nothing written);
settings that do not change results may change; and a resume runs from the model definitions
manifest.json stored, even when awm.toml is gone.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from awm_runtime.testing import FakeOpenAI, sim_responder, teach_builtin
from tests.e2e.test_awm_run import awm_run, records

KEY = "resume-key-0042"
ENV = {"LOOP_KEY": KEY}


def toml(path: Path, url: str, model: str = "openai/oracle-7b") -> Path:
    path.write_text(f'[models.loop]\nmodel = "{model}"\napi_base = "{url}"\napi_key_env = "LOOP_KEY"\n'
                    'protocol = "native"\nmax_concurrency = 8\nparams = { temperature = 0.0 }\n')
    return path


def snapshot(out: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir()) if p.is_file()}


def test_a_resume_that_would_change_an_arm_is_refused_and_runs_from_the_manifest(tmp_path: Path) -> None:
    teach_builtin()
    with FakeOpenAI(key=KEY, models=("oracle-7b",), responder=sim_responder("oracle"), max_lifetime_s=300) as first, \
            FakeOpenAI(key=KEY, models=("oracle-7b", "other-7b"), responder=sim_responder("oracle"),
                       max_lifetime_s=300) as second:
        config = toml(tmp_path / "awm.toml", first.url)
        out = tmp_path / "run"
        proc = awm_run("--config", str(config), "--policy", "loop", "--expert", "none", "--scenarios", "homehub*",
                       "--tasks", "0", "--out", str(out), "--quiet", env=ENV)
        assert proc.returncode == 0, proc.stderr
        assert len(records(out)) == 1
        stored = json.loads((out / "manifest.json").read_text())
        definition = stored["config"]["models"]["policy"]["loop"]
        assert (definition["model"], definition["api_base"], definition["api_key_env"]) == (
            "openai/oracle-7b", first.url, "LOOP_KEY")
        assert stored["arms"]["main"]["models"]["policy"] == definition
        before, calls = snapshot(out), len(first.requests)

        # The alias now points at another server (and model): the resumed half would be another arm.
        toml(config, second.url, "openai/other-7b")
        refused = awm_run("--out", str(out), "--resume", "--tasks", "0-1", env=ENV)
        assert refused.returncode == 2, refused.stderr
        (line,) = refused.stderr.strip().splitlines()
        assert line.startswith("awm-run: error: --resume: this would change what the run's arms mean")
        assert "policy 'loop' model 'openai/oracle-7b' -> 'openai/other-7b'" in line
        assert f"policy 'loop' api_base {first.url!r} -> {second.url!r}" in line and "nothing was written" in line
        # So is a flag that changes an arm, with every difference on the one line.
        toml(config, first.url)
        refused = awm_run("--out", str(out), "--resume", "--max-turns", "3", "--policy-base", second.url, env=ENV)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "max_turns 20 -> 3" in refused.stderr and f"policy_base None -> {second.url!r}" in refused.stderr
        assert snapshot(out) == before and len(first.requests) == calls and not second.requests

        # awm.toml gone: the stored definition runs; concurrency and the task selection may change.
        config.unlink()
        proc = awm_run("--out", str(out), "--resume", "--tasks", "0-1", "--concurrency", "4", "--quiet", env=ENV)
        assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert sorted(r["task_idx"] for r in recs) == [0, 1]
    assert all(r["policy"]["model"] == "openai/oracle-7b" for r in recs)
    assert len(first.requests) > calls and not second.requests
    sessions = json.loads((out / "manifest.json").read_text())["sessions"]
    assert [s["concurrency"] for s in sessions] == [32, 4]
    run_files = "".join(p.read_text() for p in out.iterdir() if p.is_file())
    assert KEY not in run_files
