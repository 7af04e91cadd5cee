"""`awm-worlds check` and `--exclude-trivial` on real worlds: no-op and reference runs, spec and verifier
problems, the scenario report, and the trivial-task cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.worlds import (
    Solution,
    check_tasks,
    load_worlds,
    parse_verifiers,
    scenario_report,
    spec_problems,
    trivial_tasks,
)
from awm_runtime.worlds._check import cache_dir, fingerprint
from tests.conftest import task_of


def trap(world: Any, idx: int, scenario: str = "trap") -> Any:
    return next(t for t in world.tasks() if t.scenario == scenario and t.task_idx == idx)


async def test_a_task_checks_as_loading_with_a_failing_noop_and_a_passing_reference(tiny_world: Any) -> None:
    [check] = await check_tasks(tiny_world, [task_of(tiny_world, 0)])
    assert (check.loads, check.noop_passes, check.reference_passes, check.errors, check.verifier) == (
        True, False, True, [], None)
    assert check.to_dict()["scenario"] == "tiny_notes"
    [quick] = await check_tasks(tiny_world, [task_of(tiny_world, 0)], reference=False)
    assert quick.reference_passes is None


async def test_world_and_verifier_failures_are_recorded_never_raised(trap_world: Any) -> None:
    raised, trivial, broken = await check_tasks(
        trap_world, [trap(trap_world, 2), trap(trap_world, 1), trap(trap_world, 0, "broken_import")],
        concurrency=2)
    # a verifier that raises: neither pass nor fail, and the error says what happened
    assert raised.loads and raised.noop_passes is None
    assert [e.split(":")[0] for e in raised.errors] == ["no-op"] and "verifier_raised" in raised.errors[0]
    # "count >= 1" already holds on the seeded DB: the no-op passes, so does the reference
    assert (trivial.noop_passes, trivial.reference_passes, trivial.errors) == (True, True, [])
    # an app that cannot import: the world error is the check's error
    assert not broken.loads and broken.noop_passes is None
    assert len(broken.errors) == 1 and "nonexistent_module_xyz" in broken.errors[0]


async def test_a_reference_step_that_errors_is_named(trap_world: Any) -> None:
    trap_world.dataset.scenarios["trap"].solutions[0] = Solution((("add_item", {}),))  # the required name missing
    [check] = await check_tasks(trap_world, [trap(trap_world, 0)])
    assert check.reference_passes is False
    assert len(check.errors) == 1 and check.errors[0].startswith("reference step 1 (add_item): ")


async def test_a_task_without_a_verifier_in_the_mode_says_why(trap_world: Any) -> None:
    [check] = await check_tasks(trap_world, [trap(trap_world, 1)], reference=False, mode="sql")
    assert check.verifier is not None and check.noop_passes is None and check.errors == []


async def test_spec_operations_missing_from_the_app_are_problems(tiny_dir: Path, tmp_path: Path) -> None:
    data = shutil.copytree(tiny_dir, tmp_path / "d")
    spec_file = data / "gen_spec.jsonl"
    [row] = [json.loads(line) for line in spec_file.read_text().splitlines() if line.strip()]
    row["api_spec"]["api_groups"].append({"endpoints": [{"operation_id": "archive_note"}, "not a dict"]})
    row["api_spec"]["api_groups"].append("not a group")
    spec_file.write_text(json.dumps(row) + "\n")
    world = load_worlds(data)
    try:
        assert await spec_problems(world, "tiny_notes") == []  # never built: nothing to compare
        [check] = await check_tasks(world, [task_of(world, 0)], reference=False)
        assert check.loads
        [problem] = await spec_problems(world, "tiny_notes")
        assert (problem.file, problem.scenario, problem.message) == (
            "gen_spec.jsonl", "tiny_notes", "operation 'archive_note' is in the spec but not in the app")
    finally:
        await world.aclose()


async def test_the_scenario_report_says_why_a_scenario_cannot_run(trap_world: Any) -> None:
    assert scenario_report(trap_world, "trap")["why_not"] == "not built: no task of it was checked"
    await check_tasks(trap_world, [trap(trap_world, 1), trap(trap_world, 0, "broken_import")], reference=False)
    ok, broken = scenario_report(trap_world, "trap"), scenario_report(trap_world, "broken_import")
    assert (ok["runnable"], ok["loads"], ok["why_not"], ok["tasks"]) == (True, True, None, 6)
    assert ok["tools"] == len(trap_world.tool_names("trap"))
    assert (broken["loads"], broken["tools"]) == (False, None) and "nonexistent_module_xyz" in broken["why_not"]
    del trap_world.dataset.scenarios["trap"].rows["gen_envs.jsonl"]
    assert scenario_report(trap_world, "trap")["why_not"] == "no usable row in gen_envs.jsonl"


def test_verifiers_that_do_not_parse_are_problems_per_task(tiny_dir: Path, tmp_path: Path) -> None:
    data = shutil.copytree(tiny_dir, tmp_path / "d")
    rows = [json.loads(line) for line in (data / "gen_verifier.pure_code.jsonl").read_text().splitlines()]
    rows[1]["verification"]["code"] = "def verify_task_completion(:\n"
    (data / "gen_verifier.pure_code.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    world = load_worlds(data)
    before = len(world.problems)
    parse_verifiers(world, ["tiny_notes"])
    [problem] = world.problems[before:]
    assert (problem.file, problem.task_idx) == ("gen_verifier.pure_code.jsonl", 1)
    parse_verifiers(world, ["tiny_notes"])  # reported once
    assert len(world.problems) == before + 1


def test_the_cache_directory_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWM_CACHE_DIR", str(tmp_path / "awm"))
    assert cache_dir() == tmp_path / "awm"
    monkeypatch.delenv("AWM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "awm-runtime"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "awm-runtime"


def test_the_fingerprint_follows_the_data_and_the_options(tiny_dir: Path, tmp_path: Path) -> None:
    data = shutil.copytree(tiny_dir, tmp_path / "d")
    first = fingerprint(load_worlds(data))
    assert fingerprint(load_worlds(data)) == first
    with (data / "gen_tasks.jsonl").open("a") as fh:
        fh.write("\n")
    assert fingerprint(load_worlds(data)) != first


async def test_trivial_tasks_are_computed_once_then_read_from_the_cache(
        trap_world: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWM_CACHE_DIR", str(tmp_path / "cache"))
    tasks = [trap(trap_world, 0), trap(trap_world, 1), trap(trap_world, 2)]
    assert await trivial_tasks(trap_world, tasks) == {("trap", 1)}
    [saved] = (tmp_path / "cache" / "trivial").iterdir()
    assert json.loads(saved.read_text()) == {"trap/0": False, "trap/1": True, "trap/2": None}
    saved.write_text(json.dumps({"trap/0": True, "trap/1": False, "trap/2": None}))  # proves it is read
    assert await trivial_tasks(trap_world, tasks) == {("trap", 0)}


async def test_a_cache_that_cannot_be_written_does_not_stop_the_check(
        trap_world: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("AWM_CACHE_DIR", str(tmp_path / "file"))  # a file where the directory would go
    assert await trivial_tasks(trap_world, [trap(trap_world, 1)]) == {("trap", 1)}
