"""Forking remote worlds by replay, against a real `awm-serve` process, over OpenEnv and over MCP.

A run on awm-serve saves checkpoints that list the prefix's tool calls; `awm-fork` replays them on fresh
sessions, and each must succeed or fail as it did. Then awm-serve is restarted on the same port with the
scenario's seed rows gone (and foreign keys enforced): a world that answers differently. Forking it is
refused, and the record names the turn where the replay diverged.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from awm_runtime import load_checkpoint
from awm_runtime.testing import FakeOpenAI
from awm_runtime.worlds import BUILTIN_DATA
from tests.e2e._inproc import run_cli
from tests.e2e.test_awm_run import awm_run, records
from tests.e2e.test_serve import BUILTIN, judge_from_trajectory, serving

DIVERGED = re.compile(r"fork refused: the world diverged at turn (\d+) of checkpoint ")


def without_rows(tmp_path: Path) -> Path:
    """The built-in worlds with no seed rows: calls that found a row now fail."""
    data = tmp_path / "no-rows"
    shutil.copytree(BUILTIN_DATA, data)
    rows = [json.loads(line) for line in (data / "gen_sample.jsonl").read_text().splitlines()]
    for row in rows:
        for table in row["sample_data"]["tables"]:
            table["insert_statements"] = []
    (data / "gen_sample.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def fork(source: Path, out: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """`awm-fork SOURCE --at 2 --arm again:mode=continue`: each episode continued from its checkpoint after 2 turns."""
    proc = run_cli("fork", str(source), "--at", "2", "--arm", "again:mode=continue", "--out", str(out), "--quiet",
                   env=env, timeout=600)  # in process (tests/e2e/_inproc.py): the subject is the continued episodes
    assert proc.returncode == 0, proc.stderr[-3000:]
    return records(out)


def check_match(source: Path, forked: list[dict[str, Any]]) -> None:
    """Same world: every prefix replays, and continuation 0 (the source's seed) plays the source episode."""
    originals = {r["episode_id"]: r for r in records(source)}
    assert forked and all(r["fork"]["turn"] == 2 for r in forked)
    replayed = 0
    for r in forked:
        assert r["end_reason"] != "world_error", r.get("error")
        original = originals[r["fork"]["episode_id"]]
        cp = load_checkpoint(r["fork"]["checkpoint"])
        n = len(cp.messages)
        assert r["messages"][:n] == original["messages"][:n]  # the prefix, as it was
        assert [m["content"] for m in r["messages"] if m["source"] == "policy"] == [
            m["content"] for m in original["messages"] if m["source"] == "policy"]
        assert r["outcome"] == original["outcome"]
        replayed += len(cp.world["calls"])
    assert replayed >= 1  # some prefix had calls to replay


def check_refused(forked: list[dict[str, Any]]) -> None:
    """Another world: forks whose prefix now answers differently are refused, with the turn of divergence."""
    refused = [r for r in forked if r["end_reason"] == "world_error"]
    assert refused
    for r in refused:
        assert r["outcome"] == "error" and r["turns"] == 0  # not played on a world in another state
        match = DIVERGED.search(r["error"]["message"])
        assert match, r["error"]["message"]
        calls = load_checkpoint(r["fork"]["checkpoint"]).world["calls"]
        assert int(match.group(1)) in {c["turn"] for c in calls}


def test_forking_an_openenv_world_on_awm_serve_by_replay(tmp_path: Path) -> None:
    source = tmp_path / "run"
    with serving() as url:
        port = url.rsplit(":", 1)[1].strip("/")
        proc = awm_run("--worlds", f"openenv+{url}", "--scenarios", "codeforge_devtools", "--tasks", "0-3",
                       "--checkpoint", "every", "--out", str(source), "--quiet")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert all(load_checkpoint(p).world["kind"] == "replay"
                   for p in (source / "checkpoints").glob("*/turn-2.json"))
        check_match(source, fork(source, tmp_path / "same", {}))
    with serving("--port", port, "--worlds", str(without_rows(tmp_path)), "--foreign-keys"):
        forked = fork(source, tmp_path / "other", {})
    check_refused(forked)
    # OpenEnv replays through the reconnect's own path, which says which call of the replay differed
    assert all("replaying call" in r["error"]["message"] for r in forked if r["end_reason"] == "world_error")


def test_forking_an_mcp_world_on_awm_serve_by_replay(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task": t.text, "id": f"{t.scenario}/{t.task_idx}"}) + "\n"
                             for t in BUILTIN.tasks() if t.scenario == "shopfront_commerce" and t.task_idx < 4))
    source = tmp_path / "run"
    env = {"JUDGE_27": "judge-key-27"}
    with FakeOpenAI(key="judge-key-27", models=("judge-27",), responder=judge_from_trajectory,
                    max_lifetime_s=280) as judge:
        config = tmp_path / "awm.toml"
        config.write_text(f'[models.loop-judge]\nmodel = "openai/judge-27"\napi_base = "{judge.url}"\n'
                          'api_key_env = "JUDGE_27"\n')
        with serving("--mcp") as url:
            port = url.rsplit(":", 1)[1].strip("/")
            proc = awm_run("--worlds", f"mcp+{url}/mcp/shopfront_commerce", "--tasks-file", str(tasks),
                           "--judge", "loop-judge", "--config", str(config), "--checkpoint", "every",
                           "--out", str(source), "--quiet", env=env)
            assert proc.returncode == 0, proc.stderr[-3000:]
            assert all(r["verdict_detail"]["mode"] == "sql" for r in records(source))
            check_match(source, fork(source, tmp_path / "same", env))
        with serving("--mcp", "--port", port, "--worlds", str(without_rows(tmp_path)), "--foreign-keys"):
            forked = fork(source, tmp_path / "other", env)
    check_refused(forked)
    assert any(" failed on replay, and succeeded in the original" in r["error"]["message"]
               for r in forked if r.get("error"))
