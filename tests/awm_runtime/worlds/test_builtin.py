"""The built-in worlds: shipped data matches the sources, the split is pinned, and every task is
solvable by its reference solution but not by doing nothing, through the real tools and verifier."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import ToolCall
from awm_runtime.worlds import BUILTIN_DATA, BUILTIN_SOURCES, AwmWorld, load_dataset, make_split, pack_sources

SHIPPED = sorted(p.name for p in BUILTIN_DATA.iterdir() if p.suffix in (".jsonl", ".json"))


@pytest.fixture(scope="module")
def repacked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("repacked")
    pack_sources(BUILTIN_SOURCES, out)
    return out


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_data_matches_sources(repacked: Path, name: str) -> None:
    assert (repacked / name).read_text() == (BUILTIN_DATA / name).read_text(), \
        f"{name} is stale: run `awm-worlds pack` and commit the result"


def test_split_is_pinned_stratified_and_about_60_40() -> None:
    split = json.loads((BUILTIN_DATA / "split.json").read_text())
    train, test = {tuple(k) for k in split["train"]}, {tuple(k) for k in split["test"]}
    ds = load_dataset(BUILTIN_DATA)
    every = {(sid, i) for sid, sc in ds.scenarios.items() for i in range(len(sc.tasks))}
    assert train | test == every and not train & test
    assert 0.35 <= len(test) / len(every) <= 0.45
    assert {s for s, _ in test} == {s for s, _ in train} == set(ds.scenarios)
    recomputed = make_split(sorted(every), seed=split["seed"], test_fraction=split["test_fraction"])
    assert recomputed["train"] == split["train"] and recomputed["test"] == split["test"]


def test_each_scenario_is_real_enough() -> None:
    ds = load_dataset(BUILTIN_DATA)
    assert len(ds.scenarios) >= 6 and not ds.problems
    for sc in ds.scenarios.values():
        source = ds.source(sc.id)
        assert len(source.tables) == sc.table_count >= 8, sc.id
        assert len(source.inserts) == sc.seed_count >= 100, sc.id
        assert any("datetime('now'" in stmt for _, stmt in source.inserts), sc.id
        assert len(sc.tasks) == 10, sc.id
        assert set(sc.verifiers["code"]) == set(sc.verifiers["sql"]) == set(sc.solutions) == set(range(10)), sc.id
        assert source.full_code.count("operation_id=") >= 25, sc.id
    steps = [len(s.steps) for sc in ds.scenarios.values() for s in sc.solutions.values()]
    assert min(steps) <= 3 and any(4 <= n <= 8 for n in steps) and max(steps) >= 9


async def _verdicts(world: AwmWorld) -> dict[tuple[str, int, str], str]:
    """(scenario, task, noop|reference) -> verdict, through the real tool path and verifier."""
    out: dict[tuple[str, int, str], str] = {}
    sem = asyncio.Semaphore(8)

    async def one(task: Any, mode: str) -> None:
        async with sem:
            session = await world.open(task, episode_id=f"{task.scenario}-{task.task_idx}-{mode}")
            try:
                solution = world.solution(task)
                answer = ""
                if mode == "reference" and solution is not None:
                    for n, (tool, args) in enumerate(solution.steps):
                        result = await session.call_tool(ToolCall(id=str(n), name=tool, arguments=args))
                        assert not result.is_error, f"{task.scenario}/{task.task_idx} {tool}: {result.text[:200]}"
                    answer = solution.final_answer
                verdict = await session.verify(answer, [])
                out[(task.scenario, task.task_idx, mode)] = verdict.result
            finally:
                await session.close()

    await asyncio.gather(*(one(t, m) for t in world.tasks() for m in ("noop", "reference")))
    return out


def _shifted_copy(out: Path, modifier: str) -> Path:
    """The built-in data with seeds as if built later: datetime('now', ...) -> datetime('now', modifier, ...)."""
    shutil.copytree(BUILTIN_DATA, out)
    sample = out / "gen_sample.jsonl"
    sample.write_text(sample.read_text().replace("datetime('now'", f"datetime('now', '{modifier}'"))
    return out


async def test_references_pass_noops_fail_and_verdicts_are_stable_across_builds(tmp_path: Path) -> None:
    now = AwmWorld(load_dataset(BUILTIN_DATA))
    later = AwmWorld(load_dataset(_shifted_copy(tmp_path / "later", "+1 minutes")))
    try:
        first, second = await _verdicts(now), await _verdicts(later)
    finally:
        now.close()
        later.close()
    failing = sorted(k for k, v in first.items() if (v == "complete") != (k[2] == "reference"))
    assert not failing, f"references that fail or no-ops that pass: {failing}"
    assert first == second


def test_shifted_build_really_moves_the_clock(tmp_path: Path) -> None:
    from awm_runtime.worlds._dbbuild import build_database

    ds = load_dataset(BUILTIN_DATA)
    source = ds.source(next(iter(ds.scenarios)))
    stmt = next(s for _, s in source.inserts if "datetime('now'" in s)
    table = next(t for t, s in source.inserts if s == stmt)
    build_database(source, tmp_path / "a.db")
    later = load_dataset(_shifted_copy(tmp_path / "later", "+1 days"))
    build_database(later.source(next(iter(later.scenarios))), tmp_path / "b.db")
    query = f'SELECT * FROM "{table}"'
    assert sqlite3.connect(tmp_path / "a.db").execute(query).fetchall() != \
        sqlite3.connect(tmp_path / "b.db").execute(query).fetchall()
