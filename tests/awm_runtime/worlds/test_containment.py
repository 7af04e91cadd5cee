"""Scenario code runs in worker processes: a bad import, a hang or a crash costs one episode, nothing more."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest

from awm_runtime import EpisodeSpec, ToolCall, WorldError, run_episode
from awm_runtime.episode import Harness
from tests.conftest import ScriptedPolicy
from tests.procs import process_gone


def call(tool: str, args: dict[str, Any] | None = None) -> ToolCall:
    return ToolCall(id=tool, name=tool, arguments=args or {})


def task(world: Any, scenario: str, idx: int = 0) -> Any:
    return next(t for t in world.tasks() if t.scenario == scenario and t.task_idx == idx)


async def test_scenario_that_fails_to_import_is_a_world_error_and_reported(trap_world: Any) -> None:
    started = time.perf_counter()
    with pytest.raises(WorldError, match=r"broken_import.*failed to import.*ModuleNotFoundError.*nonexistent_module"):
        await trap_world.open(task(trap_world, "broken_import"), episode_id="b1")
    first = time.perf_counter() - started
    started = time.perf_counter()
    with pytest.raises(WorldError, match="failed to import"):  # remembered: no second import attempt
        await trap_world.open(task(trap_world, "broken_import"), episode_id="b2")
    assert time.perf_counter() - started < first / 2  # a second attempt would cost what the first did
    assert any(p.scenario == "broken_import" and "nonexistent_module_xyz" in p.message for p in trap_world.problems)
    session = await trap_world.open(task(trap_world, "trap"), episode_id="t1")  # the other scenario is fine
    try:
        assert not (await session.call_tool(call("count_items"))).is_error
    finally:
        await session.close()


async def test_hung_handler_costs_only_its_call_and_queued_calls_go_on(trap_world: Any) -> None:
    sessions = [await trap_world.open(task(trap_world, "trap"), episode_id=f"h{i}") for i in range(4)]
    try:
        started = time.perf_counter()
        adds = [s.call_tool(call("add_item", {"name": f"x{i}"})) for i, s in enumerate(sessions[1:])]
        results = await asyncio.gather(sessions[0].call_tool(call("hang")), *adds, return_exceptions=True)
        assert isinstance(results[0], WorldError) and "did not finish within 3s" in str(results[0])
        assert time.perf_counter() - started < 30
        assert all(not isinstance(r, BaseException) and not r.is_error for r in results[1:]), results
        assert trap_world.pool.replaced >= 1
        again = await sessions[1].call_tool(call("count_items"))  # the episode's DB survived the worker swap
        assert '"count": 3' in again.text
    finally:
        for s in sessions:
            await s.close()


@pytest.mark.parametrize(("tool", "expected"), [("crash", r"worker died \(exit code 7\)"),
                                                ("exit_now", "SystemExit")])
async def test_handler_that_kills_its_worker_costs_one_call(trap_world: Any, tool: str, expected: str) -> None:
    victim = await trap_world.open(task(trap_world, "trap"), episode_id="victim")
    bystander = await trap_world.open(task(trap_world, "trap"), episode_id="bystander")
    try:
        await bystander.call_tool(call("add_item", {"name": "before"}))
        pids = set(trap_world.pool.pids())
        add = bystander.call_tool(call("add_item", {"name": "y"}))
        results = await asyncio.gather(victim.call_tool(call(tool)), add, return_exceptions=True)
        assert isinstance(results[0], WorldError) and re.search(expected, str(results[0]))
        assert not isinstance(results[1], BaseException) and '"count": 4' in results[1].text
        after = await bystander.call_tool(call("count_items"))
        assert '"count": 4' in after.text
        assert set(trap_world.pool.pids()) != pids  # a replacement worker was started
    finally:
        await victim.close()
        await bystander.close()


async def test_worker_environment_is_scrubbed(trap_dir: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from awm_runtime.worlds import WorldOptions, load_worlds

    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("AWM_POLICY", "qwen3-4b")
    world = load_worlds(trap_dir, options=WorldOptions(workers=1))
    try:
        session = await world.open(task(world, "trap"), episode_id="env")
        names = (await session.call_tool(call("env"))).text
        assert "OPENAI_API_KEY" not in names and "AWM_POLICY" not in names and "sk-must" not in names
        assert '"DATABASE_PATH"' in names  # the one variable generated code expects
        await session.close()
    finally:
        await world.aclose()


async def test_scenario_output_cannot_corrupt_the_protocol(trap_world: Any) -> None:
    session = await trap_world.open(task(trap_world, "trap"), episode_id="chatty")
    try:
        assert '"ok": true' in (await session.call_tool(call("chatty"))).text
        for _ in range(3):  # megabyte lines on stderr neither block the worker nor break the runtime's reader
            assert '"ok": true' in (await session.call_tool(call("shout"))).text
        assert trap_world.pool.replaced == 0
        assert '"count"' in (await session.call_tool(call("count_items"))).text
    finally:
        await session.close()


async def test_a_world_crash_is_one_error_record_among_siblings(trap_world: Any) -> None:
    """Eight concurrent episodes, one of which crashes its worker: eight records, exactly one error."""
    from awm_runtime._build import build_shaper

    async def one(i: int) -> Any:
        steps: list[Any] = [("crash", {})] if i == 0 else [("add_item", {"name": f"e{i}"}), "done"]
        harness = Harness(policy=ScriptedPolicy(steps), shaper=build_shaper("awm"))
        t = task(trap_world, "trap")
        session = await trap_world.open(t, episode_id=f"ep{i}")
        try:
            return await run_episode(EpisodeSpec(scenario=t.scenario, task_idx=0), t, session, harness)
        finally:
            await session.close()

    records = await asyncio.gather(*(one(i) for i in range(8)))
    assert [r.outcome for r in records].count("error") == 1
    crashed = records[0]
    assert crashed.outcome == "error" and crashed.error is not None and crashed.error.error_class == "WorldError"
    assert all(r.outcome == "complete" for r in records[1:])


def test_workers_die_with_their_parent(trap_dir: Any) -> None:
    """A runtime killed with SIGKILL leaves no worker behind (PR_SET_PDEATHSIG), even one stuck in a handler."""
    import subprocess
    import sys

    script = (
        "import asyncio, sys\n"
        "from awm_runtime.worlds import load_worlds\n"
        "from awm_runtime import ToolCall\n"
        "async def main():\n"
        f"    w = load_worlds({str(trap_dir)!r})\n"
        "    t = next(t for t in w.tasks() if t.scenario == 'trap')\n"
        "    s = await w.open(t, episode_id='x')\n"
        "    print('PIDS', *w.pool.pids(), flush=True)\n"
        "    await s.call_tool(ToolCall(id='1', name='hang', arguments={}))\n"
        "asyncio.run(main())\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = next(ln for ln in proc.stdout if ln.startswith("PIDS"))
        pids = [int(p) for p in line.split()[1:]]
        assert pids
    finally:
        proc.kill()
        proc.wait(10)
    assert all(process_gone(p) for p in pids)


async def test_a_full_pool_stops_idle_workers_and_scenarios_reload(tmp_path: Any) -> None:
    """With room for one world worker, alternating scenarios stop one and start the other; state lives in the
    DB files."""
    from awm_runtime.worlds import WorldOptions, load_worlds
    from awm_runtime.worlds._pack import merge_rows, scenario_rows, write_dataset
    from tests.awm_runtime.worlds.trap_data import TRAP_APP

    table = [{"name": "items", "ddl": "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)"}]
    write_dataset(tmp_path, merge_rows(*(scenario_rows(name, TRAP_APP, tables=table, inserts={}, tasks=["x"])
                                         for name in ("One", "Two"))))
    world = load_worlds(tmp_path, options=WorldOptions(workers=1, max_world_workers=1))
    try:
        one = await world.open(task(world, "one"), episode_id="one")
        two = await world.open(task(world, "two"), episode_id="two")
        for i in range(2):
            for session in (one, two):
                result = await session.call_tool(call("add_item", {"name": f"n{i}"}))
                assert f'"count": {i + 1}' in result.text
        assert world.pool.started >= 4 and world.pool.replaced == 0
    finally:
        await world.aclose()


async def test_a_key_a_world_returns_never_reaches_the_model_or_the_record(trap_world: Any) -> None:
    """A world that found a key (here: handed it back) cannot pass it to the policy or the episode record."""
    from awm_runtime._build import build_shaper
    from awm_runtime.logs import REDACTED, register_secrets

    key = "sk-world-found-0123456789abcdef"
    register_secrets([key])
    t = task(trap_world, "trap")
    session = await trap_world.open(t, episode_id="leak")
    try:
        harness = Harness(policy=ScriptedPolicy([("echo", {"tag": key}), "done"]), shaper=build_shaper("awm"))
        record = await run_episode(EpisodeSpec(scenario=t.scenario, task_idx=0), t, session, harness)
    finally:
        await session.close()
    world = [m for m in record.messages if m.source == "world"]
    assert world and REDACTED in world[0].content and all(key not in m.content for m in world)
    # (the scripted policy typed the key itself, in its call; the run-directory writer scrubs that too)
