"""The plan's order: scenario blocks in a seeded order, repeat-major, arms innermost, and every prefix balanced."""

from __future__ import annotations

from collections import Counter
from itertools import groupby

import pytest

from awm_runtime import ConfigError, Task
from awm_runtime._config import ArmConfig
from awm_runtime.scheduler import order_tasks, parse_task_spec, plan_episodes, scenario_matches
from awm_runtime.scheduler._plan import plan_shuffled

SCENARIOS = [f"s{i:03d}" for i in range(40)]
TASKS = [Task(scenario=s, task_idx=i, text=f"{s} task {i}") for s in SCENARIOS for i in (2, 0, 1)]  # idx unordered
ARMS = [ArmConfig(name="a"), ArmConfig(name="b"), ArmConfig(name="c")]


def _blocks(tasks: list[Task]) -> list[str]:
    return [s for s, _ in groupby(t.scenario for t in tasks)]


def test_tasks_are_grouped_by_scenario_in_a_seeded_order() -> None:
    ordered = order_tasks(TASKS, seed=7)
    blocks = _blocks(ordered)
    assert sorted(blocks) == SCENARIOS and len(blocks) == len(SCENARIOS)  # each scenario is one block
    assert [t.task_idx for t in ordered[:3]] == [0, 1, 2]
    assert order_tasks(list(reversed(TASKS)), seed=7) == ordered  # the input order does not matter
    assert _blocks(order_tasks(TASKS, seed=8)) != blocks  # the seed does
    assert blocks[:10] != SCENARIOS[:10]  # a prefix is not the dataset's first scenarios
    subset = [t for t in TASKS if t.scenario in SCENARIOS[::3]]
    assert _blocks(order_tasks(subset, seed=7)) == [s for s in blocks if s in SCENARIOS[::3]]  # stable under subsets


def test_every_prefix_of_the_plan_is_balanced_across_arms_and_repeats() -> None:
    tasks = order_tasks(TASKS, seed=3)
    plan = list(plan_episodes(tasks, ARMS, repeats=3, seed=3))
    assert len(plan) == len(TASKS) * 3 * 3 and len({s.key for s in plan}) == len(plan)
    for cut in range(0, len(plan) + 1, 7):  # an interrupted run stops anywhere
        done = plan[:cut]
        per_pair = Counter((s.scenario, s.task_idx, s.repeat) for s in done)
        assert sum(n != len(ARMS) for n in per_pair.values()) <= 1  # only the pair in flight is short of an arm
        per_task = Counter((s.scenario, s.task_idx) for s in done if s.arm == "a")
        assert max(per_task.values(), default=0) - min((per_task.get(t.key, 0) for t in tasks), default=0) <= 1
    seeds = {(s.scenario, s.task_idx, s.repeat): s.seed for s in plan}
    assert all(s.seed == seeds[(s.scenario, s.task_idx, s.repeat)] for s in plan)  # arms share the seed


def test_a_scenario_is_one_block_per_repeat_and_repeats_meet_at_the_turn() -> None:
    tasks = order_tasks(TASKS, seed=1)
    plan = list(plan_episodes(tasks, ARMS, repeats=2, seed=1))
    order = [s for s, _ in groupby(s.scenario for s in plan)]
    assert len(order) == 2 * len(SCENARIOS) - 1  # the last block of repeat 0 runs on into repeat 1
    first, second = plan[: len(plan) // 2], plan[len(plan) // 2:]
    assert {s.repeat for s in first} == {0} and {s.repeat for s in second} == {1}
    assert _blocks([Task(scenario=s.scenario, task_idx=0, text="") for s in second])[0] == _blocks(tasks)[-1]


def test_task_specs_name_indices_ranges_and_lists_and_refuse_the_rest() -> None:
    assert parse_task_spec("all") is None and parse_task_spec(" ") is None
    assert parse_task_spec("0,2,7-9") == {0, 2, 7, 8, 9}
    for bad in ("3-1", "x", "1-"):
        with pytest.raises(ConfigError, match="use 'all', an index, a range 'A-B', or a comma list"):
            parse_task_spec(bad)
    assert scenario_matches("shop_1", "bank*, shop*") and not scenario_matches("shop_1", "bank*")
    assert scenario_matches("anything", " , ")  # no pattern: every scenario


def test_an_until_decided_plan_is_a_random_sample_at_every_prefix_and_pairs_its_arms() -> None:
    arms = ARMS[:2]
    specs = list(plan_shuffled(TASKS, arms, repeats=2, seed=7))
    assert len(specs) == len(TASKS) * 2 * 2 and specs == list(plan_shuffled(TASKS, arms, repeats=2, seed=7))
    assert [s.arm for s in specs[:4]] == ["a", "b", "a", "b"]  # arms innermost: pairs finish together
    assert len({s.scenario for s in specs[: 2 * 20]}) > 10  # a prefix is spread over the scenarios
    assert specs[0].repeat == 0 and specs[-1].repeat == 1
    assert list(plan_shuffled(TASKS, arms, repeats=2, seed=8)) != specs
