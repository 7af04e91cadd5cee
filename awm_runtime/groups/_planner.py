"""GRPO groups as scheduler units: G rollouts per task and step, some with the expert, some solo.

A *step* is one pass over the selected tasks (`--repeats` counts steps). Member `m` of step `r`
has repeat index `r * G + m`, so resume works on keys as usual. With `--expert-ratio adaptive`
each step is planned only after the previous one finished, from that step's format-error rate.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from awm_runtime._errors import ConfigError
from awm_runtime._log import get_logger
from awm_runtime._seeds import episode_seed
from awm_runtime._types import EpisodeRecord, EpisodeSpec, GroupInfo, Task
from awm_runtime._units import EpisodeRunner, Unit
from awm_runtime.groups._advantage import AdvantageMode, group_advantages
from awm_runtime.groups._ratio import FIRST_PHASE, Ratio, parse_ratio, phase_for, phase_members

if TYPE_CHECKING:
    from awm_runtime._config import RunConfig
    from awm_runtime.episode import Harness

log = get_logger("awm_runtime.groups")


def had_format_error(record: Mapping[str, Any]) -> bool:
    """A rollout with at least one format error (the `multiple_calls` warning does not count)."""
    if record.get("outcome") == "format_error":
        return True
    return any(n for kind, n in (record.get("format_errors") or {}).items() if kind != "multiple_calls")


@dataclass(slots=True)
class StepStats:
    """One arm's step: the phase it ran in and what its rollouts did."""

    arm: str
    step: int
    phase: str | None
    expert_members: int
    basis_format_error_rate: float | None = None
    episodes: int = 0  # scored: infrastructure errors excluded
    with_format_errors: int = 0
    groups: set[str] = field(default_factory=set)
    incomplete: set[str] = field(default_factory=set)

    @property
    def format_error_rate(self) -> float | None:
        return self.with_format_errors / self.episodes if self.episodes else None

    def to_dict(self, size: int) -> dict[str, Any]:
        rate = self.format_error_rate
        return {"arm": self.arm, "step": self.step, "phase": self.phase, "expert_members": self.expert_members,
                "solo_members": size - self.expert_members,
                "basis_format_error_rate": None if self.basis_format_error_rate is None
                else round(self.basis_format_error_rate, 4), "groups": len(self.groups),
                "incomplete_groups": len(self.incomplete), "episodes": self.episodes,
                "format_error_rate": None if rate is None else round(rate, 4)}


@dataclass(slots=True)
class Group:
    """One task's group in one step: runs its members, re-runs a member that ended in an infrastructure
    error (same spec, so the same seed; up to the planner's `attempts` runs in all), scores."""

    planner: GroupPlanner
    arm: str
    task: Task
    step: int
    expert_members: int
    phase: str | None
    group_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    retried: dict[int, dict[str, Any]] = field(default_factory=dict)

    def specs(self) -> list[EpisodeSpec]:
        size, seed = self.planner.size, self.planner.seed
        out = []
        for m in range(size):
            repeat = self.step * size + m
            out.append(EpisodeSpec(arm=self.arm, scenario=self.task.scenario, task_idx=self.task.task_idx,
                                   repeat=repeat, seed=episode_seed(seed, self.task.scenario, self.task.task_idx,
                                                                    repeat),
                                   group_id=self.group_id, with_expert=m < self.expert_members))
        return out

    def unit(self) -> Unit:
        return Unit(self.specs(), finalize=self.finalize, play=self.play)

    async def play(self, specs: list[EpisodeSpec], run_one: EpisodeRunner) -> list[EpisodeRecord]:
        """Only `outcome: error` is re-run: every ending the agent caused stands (it is the agent's reward)."""
        records = list(await asyncio.gather(*(run_one(s) for s in specs)))
        for attempt in range(2, self.planner.attempts + 1):
            failed = [i for i, r in enumerate(records) if r.outcome == "error"]
            if not failed:
                break
            again = await asyncio.gather(*(run_one(specs[i]) for i in failed))  # run_one opens a fresh world
            for i, record in zip(failed, again, strict=True):
                old = records[i]
                error = old.error.model_dump(by_alias=True) if old.error else None
                self.retried[i] = {"episode_id": old.episode_id, "error": error, "attempt": attempt}
                log.info("group_member_retried", group_id=self.group_id, member=i, failed_episode_id=old.episode_id,
                         error=error, retry_episode_id=record.episode_id, retry_outcome=record.outcome,
                         attempt=attempt)
                records[i] = record
        return records

    def finalize(self, records: list[EpisodeRecord]) -> list[EpisodeRecord]:
        complete = all(r.outcome != "error" for r in records)
        advantages: Sequence[float | None] = (
            group_advantages([r.reward for r in records], self.planner.advantage) if complete
            else [None] * len(records))
        for i, (record, adv) in enumerate(zip(records, advantages, strict=True)):
            record.group_id = self.group_id
            record.advantage = adv
            record.group = GroupInfo(step=self.step, size=self.planner.size, expert_members=self.expert_members,
                                     with_expert=i < self.expert_members, phase=self.phase, complete=complete,
                                     retried=self.retried.get(i))
            self.planner.note(record.model_dump(include={"arm", "repeat", "outcome", "format_errors", "group_id",
                                                         "group"}))
        log.info("group_finished", group_id=self.group_id, arm=self.arm, scenario=self.task.scenario,
                 task_idx=self.task.task_idx, step=self.step, phase=self.phase, complete=complete,
                 expert_members=self.expert_members, rewards=[r.reward for r in records],
                 advantages=list(advantages), retried=len(self.retried))
        return records


class GroupPlanner:
    """Plans a run as GRPO groups (the scheduler's `Planner`)."""

    def __init__(self, tasks: Sequence[Task], arms: Mapping[str, bool], *, size: int, steps: int, ratio: Ratio,
                 seed: int = 0, advantage: AdvantageMode = "zscore", attempts: int = 3) -> None:
        self.tasks = list(tasks)
        self.arms = dict(arms)  # arm name -> has an expert
        self.size = size
        self.steps = steps
        self.ratio = ratio
        self.seed = seed
        self.advantage: AdvantageMode = advantage
        self.attempts = attempts  # runs of a member that keeps ending in an infrastructure error
        self._steps: dict[tuple[str, int], StepStats] = {}

    @classmethod
    def from_config(cls, config: RunConfig, tasks: Sequence[Task], harnesses: Mapping[str, Harness]) -> GroupPlanner:
        if config.group_size is None:
            raise ConfigError("--expert-ratio needs --group-size G (rollouts per task in each GRPO group)")
        arms = {name: h.expert is not None for name, h in harnesses.items()}
        spec = config.expert_ratio or ("adaptive" if any(arms.values()) else "0")
        ratio = parse_ratio(spec, config.group_size)
        if not any(arms.values()) and (ratio.adaptive or ratio.fixed):
            raise ConfigError(f"--expert-ratio {spec}: no arm has an expert; pass --expert ALIAS, or --expert-ratio 0")
        return cls(tasks, arms, size=config.group_size, steps=config.repeats, ratio=ratio, seed=config.seed,
                   advantage=config.advantage, attempts=config.group_attempts)

    @property
    def planned(self) -> int:
        return len(self.tasks) * len(self.arms) * self.steps * self.size

    def note(self, record: Mapping[str, Any]) -> None:
        """Count one finished member toward its arm's step (feeds the adaptive rule and the summary)."""
        key = (record["arm"], int(record["repeat"]) // self.size)
        stats = self._steps.get(key)
        if stats is None:
            group = record.get("group") or {}
            stats = self._steps[key] = StepStats(key[0], key[1], group.get("phase"),
                                                 int(group.get("expert_members", 0)))
        if record.get("group_id"):
            stats.groups.add(record["group_id"])
            if not (record.get("group") or {}).get("complete", True):
                stats.incomplete.add(record["group_id"])
        if record.get("outcome") == "error":
            return
        stats.episodes += 1
        stats.with_format_errors += had_format_error(record)

    def observe(self, record: dict[str, Any]) -> None:
        """A record from an earlier (killed) run of this directory: resume continues the curriculum."""
        if record.get("arm") in self.arms:
            self.note(record)

    def _decide(self, arm: str, step: int) -> StepStats:
        """The phase and expert members of `arm` in `step`, logged as `group_phase`."""
        basis = self._steps.get((arm, step - 1))
        rate = basis.format_error_rate if basis is not None else None
        if not self.arms[arm]:
            phase, members = ("no-expert" if self.ratio.adaptive else None), 0
        elif not self.ratio.adaptive:
            phase, members = None, int(self.ratio.fixed or 0)
        else:
            previous = basis.phase if basis is not None and basis.phase else FIRST_PHASE
            phase = phase_for(rate) if rate is not None else previous
            members = phase_members(phase, self.size)
        stats = self._steps.get((arm, step))
        if stats is None:
            stats = self._steps[(arm, step)] = StepStats(arm, step, phase, members)
        stats.phase, stats.expert_members, stats.basis_format_error_rate = phase, members, rate
        log.info("group_phase", arm=arm, step=step, phase=phase, expert_members=members,
                 solo_members=self.size - members, basis_step=step - 1 if basis is not None else None,
                 basis_format_error_rate=None if rate is None else round(rate, 4),
                 basis_episodes=basis.episodes if basis is not None else 0)
        return stats

    def _step_units(self, step: int) -> list[Unit]:
        plans = {arm: self._decide(arm, step) for arm in self.arms}
        return [Group(self, arm, task, step, plans[arm].expert_members, plans[arm].phase).unit()
                for task in self.tasks for arm in self.arms]

    def stages(self) -> Iterator[list[Unit]]:
        """Adaptive: one stage per step, each decided from the previous step's records. Fixed: one stage."""
        if self.ratio.adaptive:
            for step in range(self.steps):
                yield self._step_units(step)
        else:
            yield [u for step in range(self.steps) for u in self._step_units(step)]

    def summary(self) -> dict[str, Any]:
        steps = sorted(self._steps.values(), key=lambda s: (s.step, s.arm))
        return {"size": self.size, "expert_ratio": self.ratio.spec, "advantage": self.advantage,
                "attempts": self.attempts, "groups": sum(len(s.groups) for s in steps),
                "incomplete_groups": sum(len(s.incomplete) for s in steps),
                "steps": [s.to_dict(self.size) for s in steps]}
