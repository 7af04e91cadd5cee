"""Fork plans: arms, filters, the plan's keys and seeds, and which killed episodes a resume continues."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import ConfigError, RunConfig
from awm_runtime._config import ArmConfig
from awm_runtime._types import EpisodeSpec
from awm_runtime._units import Unit
from awm_runtime.scheduler._forks import (
    fork_arms,
    in_flight,
    parse_filter,
    parse_fork_arm,
    pin_checkpoints,
    pinned_checkpoints,
    plan_forks,
    resumable,
    select_checkpoints,
)


def test_built_in_and_custom_fork_arms() -> None:
    assert parse_fork_arm("ask").mode == "ask" and parse_fork_arm("solo").mode == "solo"
    solo3 = parse_fork_arm("solo:turns=3")
    assert solo3.mode == "solo" and solo3.solo_turns == 3
    big = parse_fork_arm("big:policy=gpt-4.1-mini,mode=ask")
    assert big.mode == "ask" and big.overrides.policy == "gpt-4.1-mini"
    assert parse_fork_arm("continue").mode == "continue" and parse_fork_arm("again:mode=continue").mode == "continue"
    assert parse_fork_arm("asked:expert=sim/oracle").mode == "continue"  # says what it changes: a custom arm
    for bad, why in (("ask:mode=maybe", "mode must be"), ("solo:turns=0", "positive integer"),
                     ("ask:turns=2", "solo_turns is for solo"), ("x:colour=red", "KEY=VAL")):
        with pytest.raises(ConfigError, match=why):
            parse_fork_arm(bad)


def test_a_bare_unknown_fork_arm_is_refused_with_the_valid_names() -> None:
    with pytest.raises(ConfigError, match=r"unknown fork arm 'sloo' \(did you mean 'solo'\?\); the fork arms are "
                                          r"ask, solo, continue") as info:
        parse_fork_arm("sloo")
    assert "policy, expert" in str(info.value)  # awm-run's arm keys, from ARM_KEYS
    with pytest.raises(ConfigError, match=r"unknown fork arm 'zzz'; the fork arms"):
        parse_fork_arm("zzz")


def test_filters() -> None:
    assert parse_filter("arm=main,scenario=shop*|home*,tasks=0-2") == {"arm": "main", "scenario": "shop*|home*",
                                                                      "tasks": "0-2"}
    assert parse_filter(None) == {}
    with pytest.raises(ConfigError, match="not KEY=VAL"):
        parse_filter("turn=3")


def test_fork_arms_merge_the_source_arm_and_refuse_an_ask_without_expert() -> None:
    source = RunConfig(arms=(ArmConfig(name="a", expert="sim/oracle", max_turns=7), ArmConfig(name="b", expert="none")))
    resolved = fork_arms(source, [parse_fork_arm("solo"), parse_fork_arm("big:max_turns=9")], ["a"])
    assert resolved[("a", "solo")] == ArmConfig(name="solo", expert="sim/oracle", max_turns=7)
    assert resolved[("a", "big")].max_turns == 9
    both = fork_arms(source, [parse_fork_arm("solo")], ["a", "b"])
    assert {a.name for a in both.values()} == {"a.solo", "b.solo"}  # several source arms: names say which
    with pytest.raises(ConfigError, match="needs an expert"):
        fork_arms(source, [parse_fork_arm("ask")], ["b"])


def _entry(episode: str, turn: int, task: int = 0, why: tuple[str, ...] = ("asked",), **extra: Any) -> dict[str, Any]:
    return {"episode_id": episode, "turn": turn, "path": f"{episode}/turn-{turn}.json", "why": list(why),
            "preceding": "nothing", "arm": "main", "scenario": "s", "task_idx": task, "repeat": 0, "seed": 11,
            "bytes": 1, "saved_at": float(turn), **extra}


def test_the_plan_pairs_arms_on_keys_and_seeds() -> None:
    arms = [parse_fork_arm("ask"), parse_fork_arm("solo")]
    resolved = fork_arms(RunConfig(), arms, ["main"])
    chosen = [{**_entry("e1", 2), "path": "/x/e1/turn-2.json"}, {**_entry("e2", 0), "path": "/x/e2/turn-0.json"}]
    specs = plan_forks(chosen, arms, resolved, repeats=2)
    assert len(specs) == 2 * 2 * 2
    keys = [s.key for s in specs]
    assert len(set(keys)) == len(keys)
    by_arm: dict[str, list[Any]] = {}
    for s in specs:
        by_arm.setdefault(s.arm, []).append((s.repeat, s.seed, s.fork.checkpoint if s.fork else None))
    assert by_arm["ask"] == by_arm["solo"]  # paired: same repeat numbers, seeds and checkpoints in both arms
    assert {r for r, _, _ in by_arm["ask"]} == {0, 1, 2, 3}
    first = [s for s in specs if s.fork and s.fork.repeat == 0]
    assert all(s.seed == 11 for s in first)  # continuation 0 keeps the source episode's seed
    assert all(s.seed != 11 for s in specs if s.fork and s.fork.repeat == 1)


def _write_run(tmp_path: Path, index: list[dict[str, Any]], recorded: list[tuple[str, str]]) -> Path:
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    for e in index:
        (run / "checkpoints" / e["episode_id"]).mkdir(exist_ok=True)
        (run / "checkpoints" / e["path"]).write_text("{}")
    (run / "checkpoints" / "index.jsonl").write_text("".join(json.dumps(e) + "\n" for e in index) + '{"torn')
    (run / "episodes.jsonl").write_text("".join(json.dumps({"episode_id": i, "outcome": o, "arm": "main",
                                                             "scenario": "s", "task_idx": 0, "repeat": 0}) + "\n"
                                                 for i, o in recorded))
    return run


def test_select_checkpoints_at_asks_at_a_turn_and_filtered(tmp_path: Path) -> None:
    index = [_entry("e1", 0, why=("every",)), _entry("e1", 1, why=("nudged",)), _entry("e2", 1, task=1),
             _entry("e3", 1)]  # e3 has no record: still in flight, not forked
    run = _write_run(tmp_path, index, [("e1", "complete"), ("e2", "incomplete")])
    assert {(e["episode_id"], e["turn"]) for e in select_checkpoints(run, "asks", {})} == {("e1", 1), ("e2", 1)}
    assert [(e["episode_id"], e["turn"]) for e in select_checkpoints(run, 0, {})] == [("e1", 0)]
    assert [e["episode_id"] for e in select_checkpoints(run, "asks", {"outcome": "incomplete"})] == ["e2"]
    assert [e["episode_id"] for e in select_checkpoints(run, "asks", {"tasks": "0"})] == ["e1"]
    with pytest.raises(ConfigError, match="no checkpoint"):
        select_checkpoints(run, 5, {})


def test_in_flight_takes_each_unrecorded_episodes_latest_checkpoint(tmp_path: Path) -> None:
    index = [_entry("e1", 0), _entry("e1", 1), _entry("e2", 0, task=1), _entry("e2", 3, task=1),
             _entry("e3", 0, task=2)]
    run = _write_run(tmp_path, index, [("e1", "complete")])
    done = {("main", "s", 0, 0)}
    got = in_flight(run / "checkpoints", {"e1"}, done)
    assert set(got) == {("main", "s", 1, 0), ("main", "s", 2, 0)}
    assert got[("main", "s", 1, 0)].checkpoint.endswith("e2/turn-3.json") and got[("main", "s", 1, 0)].mode == "resume"
    unit = resumable(Unit([EpisodeSpec(arm="main", scenario="s", task_idx=1)]), got)
    assert unit.specs[0].fork == got[("main", "s", 1, 0)]
    assert in_flight(tmp_path / "nowhere", set(), set()) == {}


def test_a_pinned_plan_is_the_states_chosen_at_fork_time_and_a_resume_checks_them(tmp_path: Path) -> None:
    """Issue 51: fork.json keeps the chosen checkpoints (relative path, sha256); a resume plans exactly those,
    whatever the source gained since, and refuses one gone from the index or changed."""
    index = [_entry("e1", 1), _entry("e2", 1)]
    run = _write_run(tmp_path, index, [("e1", "complete"), ("e2", "incomplete")])
    chosen = select_checkpoints(run, "asks", {})
    pinned = pin_checkpoints(run, chosen)
    assert [(p["episode_id"], p["path"], len(p["sha256"])) for p in pinned] == [
        ("e1", "e1/turn-1.json", 64), ("e2", "e2/turn-1.json", 64)]
    json.loads(json.dumps(pinned))  # fork.json holds it as is
    # the source gains an episode whose state would sort first: the pinned plan does not change
    with (run / "checkpoints" / "index.jsonl").open("a") as fh:
        fh.write("\n" + json.dumps(_entry("e0", 1)) + "\n")
    (run / "checkpoints" / "e0").mkdir()
    (run / "checkpoints" / "e0" / "turn-1.json").write_text("{}")
    again = pinned_checkpoints(run, pinned)
    assert [(e["episode_id"], e["path"]) for e in again] == [(e["episode_id"], e["path"]) for e in chosen]
    (run / "checkpoints" / "e2" / "turn-1.json").write_text('{"changed": 1}')
    with pytest.raises(ConfigError, match=r"checkpoint e2 turn 1 of the fork plan \(fork.json\) changed in"):
        pinned_checkpoints(run, pinned)
    (run / "checkpoints" / "e2" / "turn-1.json").unlink()
    with pytest.raises(ConfigError, match=r"checkpoint e2 turn 1 of the fork plan .* is gone from"):
        pinned_checkpoints(run, pinned)
    escape = [{**pinned[0], "path": "../../outside.json"}]
    with pytest.raises(ConfigError, match="is gone from"):  # a pinned path never leaves checkpoints/
        pinned_checkpoints(run, escape)


async def test_a_fork_run_is_prepared_with_its_planner_and_runs_each_continuation_once(tmp_path: Path) -> None:
    """What awm-fork does, in process: a source run with checkpoints, then the continuations of its turn-1
    states under two arms, planned by a ForkPlanner that `prepare` takes (one process: a planned run)."""
    from awm_runtime import RunConfig
    from awm_runtime.scheduler import ForkPlanner, fork_arms, fork_config, plan_forks, prepare, run

    source_out = tmp_path / "source"
    source = RunConfig(worlds="builtin", policy="sim/oracle", expert="none", scenarios="shop*", tasks="0-1",
                       preflight="off", checkpoint="every", out=source_out)
    with pytest.raises(ConfigError, match="holds no checkpoints"):
        select_checkpoints(tmp_path, 1, {})
    assert (await run(source)).ran == 2
    chosen = select_checkpoints(source_out, 1, {})
    arms = [parse_fork_arm("continue"), parse_fork_arm("again:mode=continue")]
    resolved = fork_arms(source, arms, (e["arm"] for e in chosen))
    config = fork_config(source, resolved.values(), tmp_path / "fork", resume=False, concurrency=2)
    assert config.checkpoint == "none" and config.concurrency == 2 and config.group_size is None
    planner = ForkPlanner(plan_forks(chosen, arms, resolved, 1), {"source": str(source_out)})
    prep = await prepare(config, planner=planner)
    assert prep.planner is planner and prep.planned == 2 * len(chosen) and prep.launch is not None
    assert prep.launch.shards == 1
    result = await run(prep)
    assert result.ran == result.planned == 2 * len(chosen) and result.summary["forks"] == {"source": str(source_out)}
