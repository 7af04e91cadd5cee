"""The real AgentWorldModel-1K extract (tests/fixtures/awm1k_samples, unaligned rows, see its SOURCE.md):
what can run runs, and every problem of the other rows is reported, never fatal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from awm_runtime import ToolCall
from awm_runtime.worlds import load_dataset, load_worlds

SAMPLES = Path(__file__).parents[2] / "fixtures" / "awm1k_samples"

# What the extract holds (its SOURCE.md), as the loader must report it.
EXPECTED_PROBLEMS = [
    "gen_envs.jsonl: marketplace_1: cannot run: no usable row in gen_envs.jsonl, gen_db.jsonl, gen_sample.jsonl, "
    "gen_tasks.jsonl",
    "gen_envs.jsonl: booking_marketplace_1: cannot run: no usable row in gen_envs.jsonl, gen_db.jsonl, "
    "gen_sample.jsonl, gen_tasks.jsonl",
    "gen_envs.jsonl: booking_and_appointments_1: cannot run: no usable row in gen_envs.jsonl, gen_db.jsonl, "
    "gen_sample.jsonl, gen_tasks.jsonl",
    "gen_envs.jsonl: e_commerce_33: cannot run: no usable row in gen_envs.jsonl",
    "gen_scenario.jsonl: content_platform_1: no row: runs without a description",
    "gen_verifier.pure_code.jsonl: content_platform_1: no verifier row for task 0-9",
    "gen_verifier.jsonl: content_platform_1: no verifier row for task 0-9",
    "gen_sample.jsonl: code_hosting_2: cannot run: no usable row in gen_sample.jsonl",
    "gen_db.jsonl: communication_messaging_1: cannot run: no usable row in gen_db.jsonl, gen_tasks.jsonl",
]


def test_the_extract_loads_as_it_is() -> None:
    ds = load_dataset(SAMPLES)
    assert {sid: sc.missing for sid, sc in ds.scenarios.items()} == {
        "marketplace_1": ["gen_envs.jsonl", "gen_db.jsonl", "gen_sample.jsonl", "gen_tasks.jsonl"],
        "booking_marketplace_1": ["gen_envs.jsonl", "gen_db.jsonl", "gen_sample.jsonl", "gen_tasks.jsonl"],
        "booking_and_appointments_1": ["gen_envs.jsonl", "gen_db.jsonl", "gen_sample.jsonl", "gen_tasks.jsonl"],
        "e_commerce_33": ["gen_envs.jsonl"],
        "content_platform_1": [],
        "code_hosting_2": ["gen_sample.jsonl"],
        "communication_messaging_1": ["gen_db.jsonl", "gen_tasks.jsonl"],
    }
    assert [str(p) for p in ds.problems] == EXPECTED_PROBLEMS
    sc = ds.scenarios["content_platform_1"]
    assert len(sc.tasks) == 10 and (sc.table_count, sc.seed_count) == (14, 154)
    assert sc.description == "" and not sc.verifiers["code"] and not sc.verifiers["sql"]
    assert sorted(ds.scenarios["e_commerce_33"].verifiers["sql"]) == [0, 1, 2]


def test_verifier_code_is_parsed_when_used_and_the_broken_one_is_reported_per_task() -> None:
    world = load_worlds(SAMPLES)
    try:
        assert [t.key for t in world.tasks()] == [("content_platform_1", i) for i in range(10)]
        assert world.verifier.problem("e_commerce_33", 2, "sql") == (
            "verifier code does not parse: closing parenthesis ']' does not match opening parenthesis '{' on "
            "line 172 (line 174)")
        assert [world.verifier.problem("e_commerce_33", i, "sql") for i in (0, 1)] == [None, None]
        assert [world.verifier.problem("e_commerce_33", i, "code") for i in (0, 1, 2)] == [None, None, None]
        assert world.verifier.problem("content_platform_1", 0) == "no verifier row"
        assert [str(p) for p in world.problems[len(EXPECTED_PROBLEMS):]] == [
            "gen_verifier.jsonl: e_commerce_33 task 2: verifier code does not parse: closing parenthesis ']' does "
            "not match opening parenthesis '{' on line 172 (line 174)"]
    finally:
        world.close()


async def test_content_platform_1_builds_and_serves_its_34_tools() -> None:
    world = load_worlds(SAMPLES)
    try:
        task = world.tasks()[0]
        session = await world.open(task, episode_id="real")
        try:
            spec = world.dataset.spec("content_platform_1")
            assert spec is not None
            listed = {e["operation_id"] for g in spec["api_groups"] for e in g["endpoints"]}
            assert len(session.tools) == 34 and {t.name for t in session.tools} == listed
            found: Any = await session.call_tool(ToolCall(id="1", name="search_channels",
                                                          arguments={"query": "Kurzgesagt"}))
            assert not found.is_error and "Kurzgesagt" in found.text, found.text[:300]
            verdict = await session.verify("", [])
            assert verdict.result == "no_verifier" and verdict.error is None
        finally:
            await session.close()
        report = world.build_report("content_platform_1")
        assert report is not None and report.statements_ok > 150
    finally:
        await world.aclose()
