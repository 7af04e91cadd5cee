"""A scenario's disk quota is sized for the run (issue 31): its template times the episodes of it that may be
open at once, so a large batch is not cut short by a limit meant for hostile code; a quota the user set that
cannot hold the run's episodes is said once, before they fail."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import structlog

from awm_runtime import RunConfig
from awm_runtime._errors import WorldError
from awm_runtime.scheduler import prepare
from awm_runtime.worlds import WorldOptions, _disk, _world, load_worlds
from awm_runtime.worlds._disk import episodes_fit, in_flight_by_scenario, quota_mib
from awm_runtime.worlds._pack import scenario_rows, write_dataset
from tests.awm_runtime.worlds.test_fault_isolation import FAULTY, TABLE, call

BLOB = {"rows": ["INSERT INTO rows (name) VALUES ('seed')", "INSERT INTO rows (name) VALUES (zeroblob(1048576))"]}
LIVE = 24  # episodes of one scenario open at once: about 38 MiB of DBs, more than a 16 MiB quota holds


def test_the_quota_holds_the_episodes_in_flight_and_never_less_than_the_floor() -> None:
    assert quota_mib(20_000, 10) == _disk.AUTO_FLOOR_MIB  # a small run keeps the floor
    mib = quota_mib(190_000, 1_700)  # issue 31's batch: ~1,700 live episodes of a ~190 KB template per scenario
    assert mib > 256 and episodes_fit(mib, 190_000) >= 1_700 and episodes_fit(256, 190_000) < 1_700
    assert quota_mib(1 << 20, 0) == quota_mib(1 << 20, 1)  # a scenario with no plan still gets one episode
    assert in_flight_by_scenario(["a", "a", "b"], 6, 8) == {"a": 8, "b": 6}


@pytest.fixture(scope="module")
def big_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("big")
    write_dataset(out, scenario_rows("Big", FAULTY, tables=TABLE, inserts=BLOB, tasks=["Do."]))
    return out


def quota(session: Any) -> int:
    st = os.statvfs(session.db)
    return st.f_blocks * st.f_frsize >> 20


async def open_all(world: Any, n: int) -> tuple[list[Any], WorldError | None]:
    task = world.tasks()[0]
    opened: list[Any] = []
    try:
        for i in range(n):
            opened.append(await world.open(task, episode_id=f"e{i}"))
    except WorldError as exc:
        return opened, exc
    return opened, None


async def test_a_scenario_with_more_live_episodes_than_the_floor_holds_gets_room_for_them(
        big_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_disk, "AUTO_FLOOR_MIB", 16)  # a floor the planned episodes overflow, as 256 MiB did
    monkeypatch.setattr(_world, "AUTO_FLOOR_MIB", 16)
    world = load_worlds(big_dir, options=WorldOptions(workers=1))
    await world.plan_in_flight({"big": LIVE})
    try:
        with structlog.testing.capture_logs() as logs:
            opened, error = await open_all(world, LIVE)
        assert error is None and len(opened) == LIVE
        size = os.stat(opened[0].db).st_size
        assert quota(opened[0]) == quota_mib(size, LIVE) > 16 and episodes_fit(16, size) < LIVE
        assert [e["mib"] for e in logs if e["event"] == "world_disk_sized"] == [quota_mib(size, LIVE)]
        counts = [json.loads((await s.call_tool(call("count"))).text) for s in (opened[0], opened[-1])]
        assert counts == [{"rows": 2}, {"rows": 2}]
        with pytest.raises(WorldError, match=f"limited to {quota_mib(size, LIVE)} MiB"):  # still a limit
            await opened[-1].call_tool(call("fill"))
        for s in opened:
            await s.close()
    finally:
        await world.aclose()


async def test_a_quota_the_user_set_too_small_for_the_run_is_said_once_and_kept(big_dir: Path) -> None:
    world = load_worlds(big_dir, options=WorldOptions(workers=1, world_disk_mib=16))
    await world.plan_in_flight({"big": LIVE})
    try:
        with structlog.testing.capture_logs() as logs:
            opened, error = await open_all(world, LIVE)
        small = [e for e in logs if e["event"] == "world_disk_small"]
        assert len(small) == 1 and small[0]["mib"] == 16 and small[0]["in_flight"] == LIVE
        assert "--world-disk-mib 16 holds about" in small[0]["note"] and f"Raise it to {small[0]['needs_mib']}" in \
            small[0]["note"]
        assert error is not None and "out of disk space: its files are limited to 16 MiB" in str(error)
        assert 0 < len(opened) < LIVE and quota(opened[0]) == 16
        for s in opened:
            await s.close()
    finally:
        await world.aclose()


async def test_a_run_plans_each_scenarios_episodes_in_flight(tmp_path: Path) -> None:
    config = RunConfig(worlds="builtin", policy="sim/oracle", expert="none", repeats=3, concurrency=5,
                       out=tmp_path / "run", preflight="off")
    prep = await prepare(config)
    try:
        tasks: dict[str, int] = {}
        for t in prep.tasks:
            tasks[t.scenario] = tasks.get(t.scenario, 0) + 1
        assert prep.world._in_flight == {s: min(5, 3 * n) for s, n in tasks.items()}  # type: ignore[union-attr]
        prep.config = config.model_copy(update={"repeats": 40, "concurrency": 10_000})  # as awm-bench scale does
        await prep.plan_disk()  # what run() does first
        assert prep.world._in_flight == {s: 40 * n for s, n in tasks.items()}  # type: ignore[union-attr]
    finally:
        await prep.world.aclose()
