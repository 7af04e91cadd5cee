"""GRPO groups: ratios, the training-wheels curriculum, advantages, re-runs of failed members, and resume."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import (
    ConfigError,
    Malformed,
    Message,
    ModelRef,
    PolicyTurn,
    RunConfig,
    Task,
    ToolSpec,
    run,
)
from awm_runtime._plugins import _local, register
from awm_runtime.groups import (
    TRAINING_WHEELS,
    GroupPlanner,
    Ratio,
    group_advantages,
    parse_ratio,
    phase_for,
    phase_members,
)
from awm_runtime.logs import iter_records, reset_logging
from awm_runtime.scheduler import episode_seed
from tests.conftest import ScriptedPolicy

G = 4


# --- the pure parts -----------------------------------------------------------------------------

@pytest.mark.parametrize(("rate", "phase"), [(1.0, "assisted"), (0.7001, "assisted"), (0.70, "balanced"),
                                             (0.55, "balanced"), (0.40, "balanced"), (0.3999, "independent"),
                                             (0.0, "independent")])
def test_training_wheels_thresholds(rate: float, phase: str) -> None:
    assert phase_for(rate) == phase


def test_phases_scale_to_the_group_size() -> None:
    assert TRAINING_WHEELS == {"assisted": (6, 2), "balanced": (4, 4), "independent": (2, 6)}
    assert [phase_members(p, 8) for p in TRAINING_WHEELS] == [6, 4, 2]
    assert [phase_members(p, 4) for p in TRAINING_WHEELS] == [3, 2, 1]
    assert [phase_members(p, 16) for p in TRAINING_WHEELS] == [12, 8, 4]


@pytest.mark.parametrize(("spec", "fixed"), [("adaptive", None), ("3", 3), ("0", 0), ("8", 8), ("0.25", 2),
                                             ("6:2", 6), ("1:1", 4), ("0:5", 0)])
def test_ratio_specs(spec: str, fixed: int | None) -> None:
    assert parse_ratio(spec, 8) == Ratio(spec, fixed)


@pytest.mark.parametrize("spec", ["9", "-1", "1.5", "half", "0:0", "a:b", ""])
def test_bad_ratio_specs(spec: str) -> None:
    with pytest.raises(ConfigError, match="--expert-ratio"):
        parse_ratio(spec, 8)


def test_advantages_sum_to_zero_per_group() -> None:
    rng = random.Random(7)
    for _ in range(200):
        rewards = [rng.choice([2.0, 1.3, 0.8, 0.1, -1.0, 0.0]) for _ in range(rng.randint(1, 16))]
        for mode in ("zscore", "center"):
            adv = group_advantages(rewards, mode)  # type: ignore[arg-type]
            assert abs(sum(adv)) < 1e-9 and len(adv) == len(rewards)
    assert group_advantages([1.3, 1.3, 1.3]) == [0.0, 0.0, 0.0]
    z = group_advantages([2.0, 0.1])
    assert z == pytest.approx([1.0, -1.0])


def test_adaptive_planner_follows_the_last_step(tiny_world: Any) -> None:
    planner = GroupPlanner(tiny_world.tasks(), {"main": True}, size=G, steps=3, ratio=Ratio("adaptive", None))
    stages = planner.stages()
    first = next(stages)
    assert {u.specs[0].with_expert for u in first} == {True}
    assert [sum(s.with_expert for s in u.specs) for u in first] == [3] * len(tiny_world.tasks())
    for unit in first:  # step 0: 9 of 12 rollouts had a format error -> 75% -> assisted again
        for spec in unit.specs:
            planner.note({"arm": "main", "repeat": spec.repeat, "outcome": "complete",
                          "format_errors": {"invalid_json": 1} if spec.repeat % G else {}})
    assert [sum(s.with_expert for s in u.specs) for u in next(stages)] == [3] * 3
    summary = planner.summary()["steps"]
    assert summary[1]["phase"] == "assisted" and summary[1]["basis_format_error_rate"] == 0.75


# --- groups through the scheduler ----------------------------------------------------------------

class StepPolicy(ScriptedPolicy):
    """Follows the reference solution; in step s a share `rates[s]` of episodes opens with a malformed reply.

    Shared by every episode: it tags each episode's first message with its index to tell them apart.
    Episode order maps to steps because an adaptive run plans step s+1 only after step s finished.
    """

    def __init__(self, ctx: Any, rates: list[float], per_step: int) -> None:
        super().__init__([""])
        self.ctx, self.rates, self.per_step = ctx, rates, per_step
        self.plans: dict[int, list[Any]] = {}

    @property
    def ref(self) -> ModelRef:
        return ModelRef(alias="steps", model="test/steps")

    def begin(self, task: Task, tools: Sequence[ToolSpec]) -> list[Message]:
        n = len(self.plans)
        step, i = divmod(n, self.per_step)
        sol = self.ctx.solution(task)
        rate = self.rates[step] if step < len(self.rates) else 0.0
        bad = [Malformed("invalid_json", "x")] if i < round(rate * self.per_step) else []
        self.plans[n] = [*bad, *sol.steps, sol.final_answer or "Done."]
        return [Message(role="user", content=f"#{n} {task.text}", source="system")]

    async def act(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, seed: int = 0) -> PolicyTurn:
        n = int((messages[0].content or "#0").split()[0][1:])
        self.script, self.calls = self.plans[n], sum(1 for m in messages if m.source == "policy")
        return await super().act(messages, tools, seed=seed)


class FlakyPolicy(ScriptedPolicy):
    """Solves its task, but crashes (an infrastructure error) on chosen episode seeds."""

    def __init__(self, ctx: Any, fail_once: set[int], fail_always: set[int]) -> None:
        super().__init__([""])
        self.ctx, self.fail_once, self.fail_always, self.failed = ctx, fail_once, fail_always, set[int]()
        self.plans: dict[str, list[Any]] = {}
        self.seeds_seen: list[int] = []  # the seed of each episode run (its first act)

    def begin(self, task: Task, tools: Sequence[ToolSpec]) -> list[Message]:
        sol = self.ctx.solution(task)
        self.plans[task.text] = [*sol.steps, sol.final_answer or "Done."]
        return [Message(role="user", content=task.text, source="system")]

    async def act(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, seed: int = 0) -> PolicyTurn:
        if not any(m.source == "policy" for m in messages):
            self.seeds_seen.append(seed)
        if seed in self.fail_always or (seed in self.fail_once and seed not in self.failed):
            self.failed.add(seed)
            raise RuntimeError(f"endpoint fell over (seed {seed})")
        self.script = self.plans[messages[0].content or ""]
        self.calls = sum(1 for m in messages if m.source == "policy")
        return await super().act(messages, tools, seed=seed)


@pytest.fixture
def plugins() -> Iterator[dict[str, Any]]:
    made: dict[str, Any] = {}

    def steps(arg: str, ctx: Any) -> StepPolicy:
        made["steps"] = StepPolicy(ctx, [float(x) for x in arg.split("/")], per_step=3 * G)
        return made["steps"]

    def flaky(arg: str, ctx: Any) -> FlakyPolicy:
        once, always = (set(map(int, filter(None, part.split(".")))) for part in arg.split("/"))
        made["flaky"] = FlakyPolicy(ctx, once, always)
        return made["flaky"]

    register("policies", "steps", steps)
    register("policies", "flaky", flaky)
    yield made
    _local["policies"].pop("steps", None)
    _local["policies"].pop("flaky", None)
    reset_logging()


def config(tiny_dir: Path, out: Path, **changes: Any) -> RunConfig:
    base: dict[str, Any] = {"worlds": str(tiny_dir), "expert": "oracle", "reward": "try-first", "group_size": G,
                            "concurrency": 8, "out": out, "nudges": ()}
    return RunConfig(**{**base, **changes})


def events(out: Path, name: str) -> list[dict[str, Any]]:
    return [e for line in (out / "events.jsonl").read_text().splitlines() if (e := json.loads(line))["event"] == name]


def check_groups(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(r["group_id"], []).append(r)
    for members in groups.values():
        assert len(members) == G and len({(m["scenario"], m["task_idx"]) for m in members}) == 1
        if members[0]["group"]["complete"]:
            assert abs(sum(m["advantage"] for m in members)) < 1e-9
        for m in members:
            assert m["group"]["with_expert"] == (m["expert"] is not None)
            assert m["group"]["with_expert"] or m["expert_calls"] == 0
    return groups


async def test_adaptive_changes_phase_when_the_format_error_rate_crosses_thresholds(
        tiny_dir: Path, tmp_path: Path, plugins: dict[str, Any]) -> None:
    out = tmp_path / "run"
    # step rates 50% -> balanced, 0% -> independent, 100% -> assisted
    result = await run(config(tiny_dir, out, policy="steps:0.5/0/1/0", repeats=4, expert_ratio="adaptive"))
    steps = result.summary["groups"]["steps"]
    assert [s["phase"] for s in steps] == ["assisted", "balanced", "independent", "assisted"]
    assert [s["expert_members"] for s in steps] == [3, 2, 1, 3]
    assert [s["format_error_rate"] for s in steps] == [0.5, 0.0, 1.0, 0.0]
    assert [s["basis_format_error_rate"] for s in steps] == [None, 0.5, 0.0, 1.0]
    phases = events(out, "group_phase")
    assert [(e["step"], e["phase"]) for e in phases] == [(0, "assisted"), (1, "balanced"), (2, "independent"),
                                                         (3, "assisted")]
    records = list(iter_records(out))
    assert len(records) == 4 * 3 * G and len({(r["task_idx"], r["repeat"]) for r in records}) == len(records)
    groups = check_groups(records)
    assert len(groups) == 12 and all(m[0]["group"]["complete"] for m in groups.values())
    assert {r["group"]["phase"] for r in records if r["repeat"] // G == 1} == {"balanced"}
    assert len(events(out, "group_finished")) == 12


async def test_resume_continues_the_curriculum_from_recorded_steps(
        tiny_dir: Path, tmp_path: Path, plugins: dict[str, Any]) -> None:
    out = tmp_path / "run"
    await run(config(tiny_dir, out, policy="steps:1/0", repeats=2, expert_ratio="adaptive"))
    reset_logging()
    # The same policy (a resume may not change an arm); its count of episodes restarts in the new process,
    # so there it takes the run's step 2 for its step 0, and slips on every episode.
    more = await run(config(tiny_dir, out, policy="steps:1/0", repeats=3, expert_ratio="adaptive", resume=True))
    assert more.ran == 3 * G and len(list(iter_records(out))) == 3 * 3 * G
    steps = more.summary["groups"]["steps"]
    # step 1 ran in the first process (after a 100% step 0: assisted); step 2 follows step 1's recorded 0%,
    # though this process's policy slips on every episode it runs
    assert [s["phase"] for s in steps] == ["assisted", "assisted", "independent"]
    assert steps[2]["basis_format_error_rate"] == 0.0 and steps[2]["format_error_rate"] == 1.0


async def test_fixed_ratio_is_one_stage_with_solo_members_offered_no_expert(
        tiny_dir: Path, tmp_path: Path, plugins: dict[str, Any]) -> None:
    out = tmp_path / "run"
    result = await run(config(tiny_dir, out, policy="steps:0", repeats=2, expert_ratio="1:1", advantage="center"))
    assert [s["phase"] for s in result.summary["groups"]["steps"]] == [None, None]
    records = list(iter_records(out))
    check_groups(records)
    for r in records:
        assert r["group"]["with_expert"] == (r["repeat"] % G < 2)
    assert {r["expert"]["alias"] for r in records if r["expert"]} == {"oracle"}


async def test_failed_member_is_rerun_with_a_fresh_world_and_a_second_failure_marks_the_group(
        tiny_dir: Path, tmp_path: Path, plugins: dict[str, Any]) -> None:
    out = tmp_path / "run"
    once = episode_seed(0, "tiny_notes", 0, 1)     # task 0, member 1: fails once, then succeeds
    always = episode_seed(0, "tiny_notes", 1, 0)   # task 1, member 0: fails on the re-run too
    result = await run(config(tiny_dir, out, policy=f"flaky:{once}/{always}", expert="none", repeats=1))
    records = list(iter_records(out))
    assert len(records) == 3 * G  # a re-run replaces its failed attempt; keys stay unique
    groups = check_groups(records)
    by_task = {m[0]["task_idx"]: m for m in groups.values()}
    retried = next(m for m in by_task[0] if m["repeat"] == 1)
    assert retried["outcome"] == "complete" and retried["group"]["retried"]["error"]["class"] == \
        "Unexpected.RuntimeError"
    assert retried["group"]["retried"]["episode_id"] != retried["episode_id"]  # a new episode, a new world
    assert all(m["group"]["complete"] and m["advantage"] is not None for m in by_task[0])
    assert all(not m["group"]["complete"] and m["advantage"] is None for m in by_task[1])
    assert next(m for m in by_task[1] if m["repeat"] == 0)["outcome"] == "error"
    assert result.summary["groups"]["steps"][0]["incomplete_groups"] == 1
    retries = events(out, "group_member_retried")  # bounded: 3 runs in all (--group-attempts), the same seed
    assert sorted((e["member"], e["attempt"]) for e in retries) == [(0, 2), (0, 3), (1, 2)]
    assert plugins["flaky"].seeds_seen.count(always) == 3 and result.summary["groups"]["incomplete_groups"] == 1
    started = [e for e in events(out, "episode_started") if e["task_idx"] == 0 and e["repeat"] == 1]
    assert len(started) == 2


@pytest.mark.parametrize(("changes", "message"), [
    ({"group_size": None, "expert_ratio": "2"}, "--group-size"),
    ({"expert": "none", "expert_ratio": "2"}, "no arm has an expert"),
    ({"expert": "none", "expert_ratio": "adaptive"}, "no arm has an expert"),
    ({"expert_ratio": "lots"}, "--expert-ratio"),
])
async def test_group_config_errors(tiny_dir: Path, tmp_path: Path, plugins: dict[str, Any], changes: dict[str, Any],
                                   message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        await run(config(tiny_dir, tmp_path / "x", policy="steps:0", **changes))
    assert not (tmp_path / "x").exists()
