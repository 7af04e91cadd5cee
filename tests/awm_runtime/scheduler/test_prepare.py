"""`prepare` refuses, in one line and before any episode, what no run can play; and resolves what it can."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import ArmConfig, ConfigError, RunConfig
from awm_runtime.scheduler import prepare, run
from awm_runtime.verifiers import Judge

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BUILTIN: dict[str, Any] = {"worlds": "builtin", "policy": "sim/oracle", "expert": "none", "scenarios": "shop*",
                           "tasks": "0", "preflight": "off", "shards": 1}


def toml(tmp_path: Path, extra: str = "") -> Path:
    """An alias served over HTTP at a port nothing listens on (the preflight is off: nothing calls it)."""
    path = tmp_path / "awm.toml"
    path.write_text('[models.served]\nmodel = "openai/served"\napi_base = "http://127.0.0.1:9/v1"\n'
                    f'api_key_env = "PREP_KEY"\nprotocol = "native"\n{extra}')
    return path


async def refused(config: RunConfig, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as info:
        await prepare(config)
    assert "\n" not in str(info.value)


async def test_tasks_nothing_matches_and_sql_without_a_judge_are_refused(tmp_path: Path) -> None:
    await refused(RunConfig(**{**BUILTIN, "scenarios": "no_such_scenario*"}, out=tmp_path / "a"),
                  r"no tasks match --scenarios 'no_such_scenario\*'")
    await refused(RunConfig(**BUILTIN, verifier="sql", out=tmp_path / "b"), "--verifier sql needs --judge ALIAS")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()  # nothing written


async def test_a_bad_out_is_refused_before_any_world_loads(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    await refused(RunConfig(**BUILTIN, out=tmp_path / "file"), "a file of that name exists")
    await refused(RunConfig(**BUILTIN, out=tmp_path / "file" / "run"), "is a file, so the run directory cannot")
    await refused(RunConfig(**BUILTIN, out=tmp_path / "none", resume=True), "holds no run to resume")
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / "manifest.json").write_text("{not json")
    await refused(RunConfig(**BUILTIN, out=tmp_path / "torn", resume=True), "manifest.json is unreadable")


async def test_a_run_directory_that_holds_a_run_needs_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = await run(RunConfig(**BUILTIN, out=out))
    assert first.ran == 1
    await refused(RunConfig(**BUILTIN, out=out), "already holds a run; pass --resume")
    again = await run(RunConfig(**BUILTIN, out=out, resume=True))
    assert again.skipped == 1 and again.ran == 0 and again.run_id == first.run_id


async def test_skip_and_trivial_filters_keep_the_tasks_that_can_tell_success(tmp_path: Path) -> None:
    prep = await prepare(RunConfig(**{**BUILTIN, "tasks": "0-2"}, unverified="skip", exclude_trivial=True,
                                   out=tmp_path / "run"))
    try:
        assert 1 <= len(prep.tasks) <= 3 and all(t.has_verifier for t in prep.tasks)
    finally:
        await prep.world.aclose()


async def test_checkpoints_live_in_the_run_directory_and_sql_runs_are_judged_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREP_KEY", "k")
    prep = await prepare(RunConfig(**BUILTIN, checkpoint="every", verifier="sql", judge="served",
                                   config_path=toml(tmp_path), out=tmp_path / "run"))
    try:
        assert prep.checkpoint_root == tmp_path / "run" / "checkpoints"
        assert isinstance(prep.world.judge, Judge)  # type: ignore[attr-defined]
        assert ("judge", "served") in prep.ctx.clients
    finally:
        await prep.world.aclose()


async def test_a_budget_in_unknown_dollars_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREP_KEY", "k")
    arms = (ArmConfig(name="a", policy="served"), ArmConfig(name="b", policy="served", max_turns=3))
    config = RunConfig(**{**BUILTIN, "policy": "served"}, arms=arms, until_decided=True, max_usd=1.0,
                       config_path=toml(tmp_path), out=tmp_path / "run")
    await refused(config, "--max-usd: no price for policy served")
    priced = toml(tmp_path, "input_cost_per_mtok = 1.0\noutput_cost_per_mtok = 2.0\n")
    prep = await prepare(config.model_copy(update={"config_path": priced}))
    try:
        assert prep.launch is not None and prep.launch.stopping is not None
    finally:
        await prep.world.aclose()


async def test_ray_refuses_a_model_each_actor_would_serve_itself(tmp_path: Path) -> None:
    local = toml(tmp_path).with_name("local.toml")
    local.write_text('[models.tiny]\nmodel = "openai/tiny"\nlocal_server = { gguf = "/nonexistent/tiny.gguf" }\n')
    await refused(RunConfig(**{**BUILTIN, "policy": "tiny"}, config_path=local, ray="127.0.0.2:1",
                            out=tmp_path / "run"), r"--ray cannot use local models \(tiny\)")


async def test_a_resumed_run_keeps_its_stored_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREP_KEY", "k")
    out = tmp_path / "run"
    first = await run(RunConfig(**BUILTIN, out=out))
    stored = json.loads((out / "manifest.json").read_text())["config"]
    prep = await prepare(RunConfig(**BUILTIN, out=out, resume=True))
    try:
        assert prep.config.models == stored["models"] and prep.launch is not None
        assert prep.launch.run_id == first.run_id and prep.launch.previous is not None
    finally:
        await prep.world.aclose()


async def test_a_grouped_run_is_planned_in_stages_in_one_process(tmp_path: Path) -> None:
    config = RunConfig(**{**BUILTIN, "expert": "sim/oracle", "shards": "auto"}, group_size=2, reward="try-first",
                       concurrency=4, out=tmp_path / "run")
    await refused(config.model_copy(update={"shards": 2}), "--group-size runs in one process")
    result = await run(config)
    assert result.ran == result.planned == 2 and result.summary["shards"] == 1 and "groups" in result.summary
    again = await run(config.model_copy(update={"resume": True}))
    assert again.skipped == 2 and again.ran == 0


async def test_an_endpoint_that_serves_fewer_than_the_concurrency_gates_its_episodes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over real HTTP: the alias serves one call at a time, the run may keep three episodes in flight; two at most
    start (two per slot), the others wait at the gate (events say so), and every one is recorded."""
    from awm_runtime.testing import FakeOpenAI, sim_responder, teach_builtin

    teach_builtin()
    monkeypatch.setenv("PREP_KEY", "gate-key-0123")
    with FakeOpenAI(key="gate-key-0123", models=("served",), responder=sim_responder("oracle")) as server:
        path = tmp_path / "awm.toml"
        path.write_text(f'[models.served]\nmodel = "openai/served"\napi_base = "{server.url}"\n'
                        'api_key_env = "PREP_KEY"\nprotocol = "native"\nmax_concurrency = 1\n')
        result = await run(RunConfig(**{**BUILTIN, "policy": "served", "tasks": "0-2", "preflight": "quick"},
                                     concurrency=3, config_path=path, out=tmp_path / "run"))
    assert result.ran == 3
    gated = [json.loads(x) for x in (tmp_path / "run" / "events.jsonl").read_text().splitlines()
             if '"episodes_gated"' in x]
    assert gated and gated[0]["slots"] == 1 and gated[0]["episodes"] == 2 and gated[0]["concurrency"] == 3


async def test_filters_that_read_verifier_code_need_local_worlds(tmp_path: Path) -> None:
    """An MCP world holds no verifier code: --exclude-trivial and --unverified skip are refused for it."""
    import sys

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task": "Echo hi."}\n')
    script = tmp_path / "server.py"
    script.write_text("from mcp.server.fastmcp import FastMCP\nmcp = FastMCP('echo')\n"
                      "@mcp.tool()\ndef echo(text: str) -> str:\n    return text\nmcp.run()\n")
    remote = {**BUILTIN, "worlds": f"mcp+stdio:{sys.executable} {script}", "scenarios": "*", "tasks": "all"}
    await refused(RunConfig(**remote, tasks_file=tasks, exclude_trivial=True, out=tmp_path / "a"),
                  "--exclude-trivial needs local worlds")
    await refused(RunConfig(**remote, tasks_file=tasks, unverified="skip", out=tmp_path / "b"),
                  "--unverified skip needs local worlds")


async def test_a_sharded_run_checkpoints_in_its_shards_into_the_run_directory(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = await run(RunConfig(**{**BUILTIN, "tasks": "0-1", "shards": 2}, concurrency=2, checkpoint="every",
                                 out=out))
    assert result.ran == 2 and result.summary["shards"] == 2
    assert any((out / "checkpoints").rglob("*"))  # the shards saved where the parent's resume looks


async def test_tasks_without_a_verifier_run_unverified_or_are_skipped(tmp_path: Path) -> None:
    from awm_runtime.worlds import pack_sources

    worlds = tmp_path / "worlds"
    pack_sources(FIXTURES / "tiny_src", worlds)
    code = worlds / "gen_verifier.pure_code.jsonl"  # task 1 loses its code-mode verifier
    code.write_text("".join(line + "\n" for line in code.read_text().splitlines() if json.loads(line)["task_idx"] != 1))
    local = {**BUILTIN, "worlds": str(worlds), "scenarios": "*", "tasks": "all", "verifier": "code"}
    kept = await prepare(RunConfig(**local, unverified="run", out=tmp_path / "a"))
    await kept.world.aclose()
    assert sorted(t.task_idx for t in kept.tasks) == [0, 1, 2]  # task 1 runs, verdict no_verifier
    skipped = await prepare(RunConfig(**local, unverified="skip", out=tmp_path / "b"))
    await skipped.world.aclose()
    assert sorted(t.task_idx for t in skipped.tasks) == [0, 2]
    await refused(RunConfig(**{**local, "tasks": "1"}, unverified="skip", out=tmp_path / "c"),
                  "none of the 1 selected tasks has a usable code-mode verifier")


async def test_a_prompts_folder_is_checked_and_used_for_the_run(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from awm_runtime._prompts import PROMPTS_ENV

    monkeypatch.delenv(PROMPTS_ENV, raising=False)  # restored after the test: the folder is this process's
    await refused(RunConfig(**BUILTIN, prompts=tmp_path / "missing", out=tmp_path / "a"), "--prompts .*not a directory")
    (tmp_path / "mine").mkdir()
    prep = await prepare(RunConfig(**BUILTIN, prompts=tmp_path / "mine", out=tmp_path / "b"))
    await prep.world.aclose()
    assert prep.tasks and PROMPTS_ENV in os.environ
