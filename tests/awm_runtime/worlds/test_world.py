"""AwmWorld sessions: fresh DB per episode from a read-only template, no reward tools, verdicts, options."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import ToolCall, WorldError
from awm_runtime._errors import ConfigError
from awm_runtime.worlds import WorldOptions, load_worlds
from tests.conftest import task_of
from tests.procs import process_gone


def call(tool: str, args: dict[str, Any] | None = None) -> ToolCall:
    return ToolCall(id=tool, name=tool, arguments=args or {})


def trap_task(world: Any, idx: int) -> Any:
    return next(t for t in world.tasks() if t.scenario == "trap" and t.task_idx == idx)


async def test_each_episode_starts_from_the_initial_state(tiny_world: Any) -> None:
    a = await tiny_world.open(task_of(tiny_world, 0), episode_id="same")
    await a.call_tool(call("create_note", {"title": "only-a"}))
    b = await tiny_world.open(task_of(tiny_world, 0), episode_id="same")  # even with the same episode id
    try:
        assert a.db != b.db and a.initial_db == b.initial_db
        assert '"notes": []' in (await b.call_tool(call("list_notes", {"title": "only-a"}))).text
        assert os.stat(a.initial_db).st_mode & 0o777 == 0o444
    finally:
        await a.close()
        await b.close()
    assert not a.db.exists() and not b.db.exists()
    with pytest.raises(WorldError, match="closed"):
        await a.call_tool(call("list_notes"))


async def test_agent_cannot_reach_verify_or_done(tiny_world: Any) -> None:
    session = await tiny_world.open(task_of(tiny_world, 0), episode_id="reward")
    try:
        names = {t.name for t in session.tools}
        assert not names & {"verify", "done", "__list_scenarios__"}
        for name in ("verify", "done"):
            result = await session.call_tool(call(name))
            assert result.is_error and result.text == f"Unknown tool: {name}"
            assert "reward" not in result.text and "complete" not in result.text
    finally:
        await session.close()


async def test_code_mode_verdicts_noop_and_reference(tiny_world: Any) -> None:
    t = task_of(tiny_world, 0)
    noop = await tiny_world.open(t, episode_id="noop")
    ref = await tiny_world.open(t, episode_id="ref")
    try:
        assert (await noop.verify("", [])).result == "others"
        for tool, args in tiny_world.solution(t).steps:
            await ref.call_tool(call(tool, args))
        verdict = await ref.verify("", [])
        assert verdict.result == "complete" and verdict.mode == "code" and verdict.elapsed_ms > 0
    finally:
        await noop.close()
        await ref.close()


async def test_verifier_that_raises_is_verifier_raised_naming_file_scenario_task(trap_world: Any) -> None:
    session = await trap_world.open(trap_task(trap_world, 2), episode_id="raises")
    try:
        verdict = await session.verify("", [])
    finally:
        await session.close()
    assert verdict.result == "verifier_raised"  # raised in the call: on the agent's DB, the agent's incomplete
    assert verdict.error and verdict.error.startswith("gen_verifier.pure_code.jsonl: scenario trap task 2: ")
    assert "ZeroDivisionError" in verdict.error and "verifier line 2" in verdict.error


async def test_verifier_cannot_write_the_episode_db(trap_world: Any) -> None:
    session = await trap_world.open(trap_task(trap_world, 5), episode_id="writer")
    try:
        await session.call_tool(call("add_item", {"name": "kiwi"}))
        verdict = await session.verify("", [])
        assert verdict.result == "verifier_raised" and "readonly database" in (verdict.error or "")
        assert os.stat(session.db).st_mode & 0o777 == 0o644  # writable again after the verifier
        assert '"count": 3' in (await session.call_tool(call("count_items"))).text  # nothing was deleted
    finally:
        await session.close()


async def test_seed_failures_are_problems_not_fatal(trap_world: Any) -> None:
    session = await trap_world.open(trap_task(trap_world, 1), episode_id="seed")
    await session.close()
    report = trap_world.build_report("trap")
    assert report is not None and report.retried_quotes == 1
    assert [f.statement for f in report.failures] == ["INSERT INTO nowhere VALUES (1)"]
    assert any(p.file == "gen_sample.jsonl" and "no such table: nowhere" in p.message for p in trap_world.problems)
    assert any(p.file == "gen_tasks.jsonl" and p.line == 3 for p in trap_world.problems)  # the broken JSON row


@pytest.mark.parametrize("foreign_keys", [False, True])
async def test_foreign_keys_option(trap_dir: Path, foreign_keys: bool) -> None:
    world = load_worlds(trap_dir, options=WorldOptions(foreign_keys=foreign_keys, workers=1))
    try:
        session = await world.open(trap_task(world, 1), episode_id="fk")
        result = await session.call_tool(call("add_tag", {"item_id": 999}))
        await session.close()
        seed_failed = any("FOREIGN KEY" in f.error for f in world.build_report("trap").failures)
    finally:
        await world.aclose()
    assert result.is_error is foreign_keys and seed_failed is foreign_keys
    if foreign_keys:
        assert "Status code: 500" in result.text


async def test_sync_close_stops_every_process(tiny_dir: Path) -> None:
    world = load_worlds(tiny_dir)
    session = await world.open(task_of(world, 0), episode_id="x")
    await session.verify("", [])
    pids = [*world.pool.pids(), world.sandbox.pid]
    workdir = world.workdir
    world.close()
    assert all(pid is not None and process_gone(pid) for pid in pids)
    assert not workdir.exists()


BOOT_APP = '''
import os
from fastapi import FastAPI
from sqlalchemy import create_engine, text
engine = create_engine(os.getenv("DATABASE_PATH", "sqlite:///boot.db"))
app = FastAPI(title="Boot")


@app.on_event("startup")
def seed_on_startup():
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE IF NOT EXISTS boot (n INTEGER)"))
        conn.execute(text("INSERT INTO boot VALUES (%s)"))


@app.get("/boot", operation_id="boot_rows", summary="Rows the startup handler wrote")
async def boot_rows():
    with engine.connect() as conn:
        return {"rows": conn.execute(text("SELECT COUNT(*) FROM boot")).scalar()}
'''


@pytest.mark.parametrize(("value", "loads"), [("7", True), ("'no such column' + x", False)])
async def test_startup_handlers_run_once_into_the_initial_state(tmp_path: Path, value: str, loads: bool) -> None:
    from awm_runtime.worlds._pack import scenario_rows, write_dataset

    write_dataset(tmp_path, scenario_rows("Boot", BOOT_APP % value, tables=[{"name": "t", "ddl": "CREATE TABLE t (a)"}],
                                          inserts={}, tasks=["x"]))
    world = load_worlds(tmp_path, options=WorldOptions(workers=2))
    try:
        if not loads:
            with pytest.raises(WorldError, match="startup failed"):
                await world.open(world.tasks()[0], episode_id="b")
            return
        sessions = [await world.open(world.tasks()[0], episode_id=f"b{i}") for i in range(12)]
        results = [await s.call_tool(call("boot_rows")) for s in sessions]
        assert all('"rows": 1' in r.text for r in results)  # once, in the template: not once per worker
    finally:
        await world.aclose()


async def test_a_handler_that_fails_mid_write_does_not_lock_the_db(trap_world: Any) -> None:
    session = await trap_world.open(trap_task(trap_world, 1), episode_id="half")
    try:
        failed = await session.call_tool(call("half_write"))
        assert failed.is_error and "Status code: 500" in failed.text
        added = await session.call_tool(call("add_item", {"name": "after"}))
        # A lock left behind would hold the call to sqlite's 5-s busy timeout, past this world's 3-s tool timeout:
        # an error. So success is the check, with no clock bound a loaded machine could cross.
        assert not added.is_error and '"count": 3' in added.text  # "half" rolled back
    finally:
        await session.close()


def test_workdirs_left_by_a_killed_runtime_are_swept(tmp_path: Path) -> None:
    import subprocess
    import sys

    from awm_runtime.worlds._workdir import default_workdir

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    mine = default_workdir()
    stale = mine.parent / f"awm-world-{int(dead.stdout)}-abc123"
    stale.mkdir()
    (stale / "ep-1.db").write_bytes(b"x" * 1000)
    again = default_workdir()
    try:
        assert not stale.exists() and mine.exists()  # ours (a live pid) is left alone
        assert os.stat(again).st_mode & 0o777 == 0o700  # dataset code runs as this uid: no one else needs in
    finally:
        for d in (mine, again):
            d.rmdir()


def test_a_world_that_is_only_listed_leaves_nothing_behind(tiny_dir: Path) -> None:
    world = load_worlds(tiny_dir)
    assert world.tasks() and world._workdir is None
    world.close()


@pytest.fixture
def three_tiny(tiny_dir: Path, tmp_path: Path) -> Path:
    """tiny_notes copied as three scenarios (tiny_notes_0000 ...), each built and imported on its own."""
    from awm_runtime.bench._awm1k_data import write_awm1k_set

    return Path(write_awm1k_set(tiny_dir, tmp_path / "three", 3)["dir"])


async def test_idle_scenarios_beyond_the_limit_are_evicted_and_built_again_when_needed(three_tiny: Path) -> None:
    world = load_worlds(three_tiny, options=WorldOptions(workers=2, keep_idle_scenarios=1))
    first = [next(t for t in world.tasks() if t.scenario == f"tiny_notes_{i:04d}") for i in range(3)]
    try:
        a = await world.open(first[0], episode_id="a")
        template_a = a.initial_db
        b = await world.open(first[1], episode_id="b")
        await a.close()
        assert template_a.exists() and world.residency()["idle"] == 1  # one idle scenario is kept
        c = await world.open(first[2], episode_id="c")
        await b.close()  # now two are idle: the oldest (a's) goes
        assert not template_a.exists() and world.residency()["evictions"] == 1
        assert "tiny_notes_0000" not in world.pool._specs  # the pool forgot its code too
        assert c.initial_db.exists()  # an open episode's scenario is never evicted
        assert (await c.call_tool(call("list_notes"))).is_error is False
        again = await world.open(first[0], episode_id="a2")  # built again, from the rows on disk
        assert again.initial_db.exists() and len(again.tools) == len(c.tools)
        await again.close()
        await c.close()
        assert world.residency()["builds"] == 4 and world.tool_names("tiny_notes_0000") is not None
    finally:
        await world.aclose()


async def test_evicting_a_scenario_stops_its_world_workers_and_removes_its_directory(three_tiny: Path) -> None:
    """One scenario per worker (issue 12) and residency (issue 18): eviction is how a scenario's memory goes."""
    import asyncio

    world = load_worlds(three_tiny, options=WorldOptions(workers=2, keep_idle_scenarios=0))
    first = [next(t for t in world.tasks() if t.scenario == f"tiny_notes_{i:04d}") for i in range(2)]
    try:
        a = await world.open(first[0], episode_id="a")
        assert (await a.call_tool(call("list_notes"))).is_error is False
        directory, template = world.workdir / "tiny_notes_0000", a.initial_db
        workers = [w.pid for w in world.pool.workers["tiny_notes_0000"] if w.pid is not None]
        assert workers and all(p in world.pool.pids() for p in workers)
        b = await world.open(first[1], episode_id="b")
        await a.close()  # no idle scenario is kept: a's goes now, b's stays while its episode is open
        assert "tiny_notes_0000" not in world.pool.workers and not directory.exists() and not template.exists()
        for _ in range(200):  # the stop runs on the loop: wait for it there, boundedly
            if all(process_gone(p, within_s=0.01) for p in workers):
                break
            await asyncio.sleep(0.05)
        assert all(process_gone(p, within_s=0.01) for p in workers)
        assert "tiny_notes_0001" in world.pool.workers and (await b.call_tool(call("list_notes"))).is_error is False
        again = await world.open(first[0], episode_id="a2")  # a new worker, confined to a directory made anew
        assert (await again.call_tool(call("list_notes"))).is_error is False
        assert not set(workers) & {w.pid for w in world.pool.workers["tiny_notes_0000"]}
        await again.close()
        await b.close()
        assert world.residency()["evictions"] == 3 and not world.pool.workers
    finally:
        await world.aclose()


async def test_a_verifier_that_does_not_parse_runs_unverified_and_is_reported_once(tiny_dir: Path,
                                                                                 tmp_path: Path) -> None:
    import json
    import shutil

    ds = tmp_path / "ds"
    shutil.copytree(tiny_dir, ds)
    path = ds / "gen_verifier.pure_code.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["verification"]["code"] = "def verify_task_completion(initial_db_path, final_db_path):\n    return {[}\n"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    world = load_worlds(ds)
    try:
        assert world.unverified(list(world.tasks())) == {
            ("tiny_notes", 0): "verifier code does not parse: closing parenthesis '}' does not match opening "
                               "parenthesis '[' (line 2)"}
        for n in range(2):
            session = await world.open(task_of(world, 0), episode_id=f"bad{n}")
            verdict = await session.verify("", [])
            await session.close()
            assert verdict.result == "no_verifier" and verdict.mode == "none"
            assert verdict.error is not None and "gen_verifier.pure_code.jsonl: scenario tiny_notes task 0: " \
                "verifier code does not parse" in verdict.error
        reported = [p for p in world.problems if p.task_idx == 0]
        assert len(reported) == 1 and reported[0].file == "gen_verifier.pure_code.jsonl"
    finally:
        await world.aclose()


async def test_an_open_cancelled_while_its_scenario_builds_leaves_no_hold_behind(three_tiny: Path) -> None:
    """The second open waits for the first one's build and is cancelled there. (Cancelling the open that
    talks to the worker itself would leave its reply in the pipe: issue 12's request ids fix that.)"""
    import asyncio

    world = load_worlds(three_tiny, options=WorldOptions(workers=2, keep_idle_scenarios=0))
    task = world.tasks()[0]
    try:
        first = asyncio.create_task(world.open(task, episode_id="first"))
        for _ in range(500):  # until the build is under way in a worker
            if world.builds:
                break
            await asyncio.sleep(0.01)
        second = asyncio.create_task(world.open(task, episode_id="second"))
        await asyncio.sleep(0.05)
        assert world._holds[task.scenario] == 2 and not second.done()
        second.cancel()
        with pytest.raises(asyncio.CancelledError):
            await second
        session = await first
        assert world._holds[task.scenario] == 1 and session.tools
        await session.close()
        await session.close()  # closing twice releases once
        assert not world._holds and world.residency()["idle"] == 0 and world.residency()["evictions"] == 1
        assert not session.initial_db.exists()
    finally:
        await world.aclose()


async def test_an_open_cancelled_during_the_first_build_leaves_the_scenario_usable() -> None:
    """A rollout batch past its timeout cancels episodes whose scenario is still building: the build goes on."""
    import asyncio

    world = load_worlds("builtin")  # a real scenario: its build takes long enough to be cut in the middle
    task = next(t for t in world.tasks() if t.scenario.startswith("shopfront"))
    try:
        first = asyncio.create_task(world.open(task, episode_id="cut"))
        await asyncio.sleep(0.3)
        assert not first.done()
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        session = await world.open(task, episode_id="next")
        try:
            assert '"users"' in (await session.call_tool(call("list_users"))).text
        finally:
            await session.close()
    finally:
        await world.aclose()


@pytest.mark.parametrize(("field", "value"), [("verifier_memory_mb", -1), ("world_memory_mb", 0),
                                              ("tool_timeout_s", -5.0), ("workers", -1), ("world_disk_mib", 0)])
def test_a_world_option_that_would_mean_no_limit_is_one_config_error(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=f"world option {field} must be"):
        WorldOptions(**{field: value})
