"""Which episodes a run holds, and in what order: task selection, arms, repeats and paired seeds.

The order (what `plan_episodes` yields, and what the episode pool starts first):
1. **repeat-major**: every selected task runs `r` times before any runs `r + 1` times;
2. within a repeat, **scenario blocks**: a scenario's tasks are adjacent, so its episodes run
   together on the world workers that imported it, and it is imported once per pass (then evicted
   when the run has moved on); the blocks come in a seeded order (`order_tasks`), so any prefix of the
   run is a uniform sample of scenarios, not the dataset's first ones; odd repeats walk the blocks
   backwards, so the scenarios still resident at the end of one pass start the next;
3. within a block, tasks by index; **arms innermost**: the arms of one (task, repeat) are adjacent
   and share a seed, so a partial or interrupted run stays paired and balanced across arms.
Resume is a set difference over episode keys, so it does not depend on the order.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
import os
from collections.abc import Iterator, Sequence
from typing import Literal

from awm_runtime._config import ArmConfig
from awm_runtime._errors import ConfigError
from awm_runtime._seeds import episode_seed
from awm_runtime._types import EpisodeSpec, Task


def parse_task_spec(spec: str) -> set[int] | None:
    """`all`, `3`, `0-4`, `0,2,7-9` -> task indices (None means all)."""
    spec = spec.strip()
    if spec in ("", "all", "*"):
        return None
    out: set[int] = set()
    for part in spec.split(","):
        lo, dash, hi = part.strip().partition("-")
        try:
            if dash:
                a, b = int(lo), int(hi)
                if b < a:
                    raise ValueError
                out.update(range(a, b + 1))
            else:
                out.add(int(lo))
        except ValueError:
            raise ConfigError(f"--tasks {spec!r}: use 'all', an index, a range 'A-B', or a comma list") from None
    return out


def _patterns(scenarios: str) -> list[str]:
    return [p.strip() for p in scenarios.split(",") if p.strip()] or ["*"]


def scenario_matches(scenario: str, scenarios: str) -> bool:
    """Whether a scenario id matches `--scenarios` (comma-separated globs)."""
    return any(fnmatch.fnmatchcase(scenario, p) for p in _patterns(scenarios))


def select_tasks(tasks: Sequence[Task], *, scenarios: str = "*", task_spec: str = "all",
                 split: set[tuple[str, int]] | None = None,
                 exclude: set[tuple[str, int]] | None = None) -> list[Task]:
    wanted = parse_task_spec(task_spec)
    patterns = _patterns(scenarios)
    return [
        t for t in tasks
        if any(fnmatch.fnmatchcase(t.scenario, p) for p in patterns)
        and (wanted is None or t.task_idx in wanted)
        and (split is None or t.key in split)
        and (exclude is None or t.key not in exclude)
    ]


def order_tasks(tasks: Sequence[Task], seed: int) -> list[Task]:
    """`tasks` grouped by scenario (each scenario's by index), the scenarios in an order drawn from `seed`.

    A scenario's place depends only on the seed and its name, so a resumed run, or a run over a subset
    of the scenarios, keeps the same relative order."""
    blocks: dict[str, list[Task]] = {}
    for t in tasks:
        blocks.setdefault(t.scenario, []).append(t)
    order = sorted(blocks, key=lambda s: hashlib.blake2b(f"{seed}:{s}".encode(), digest_size=8).digest())
    return [t for s in order for t in sorted(blocks[s], key=lambda t: t.task_idx)]


def plan_episodes(tasks: Sequence[Task], arms: Sequence[ArmConfig], *, repeats: int,
                  seed: int) -> Iterator[EpisodeSpec]:
    """Repeat-major, then `tasks` as given (forwards on even repeats, backwards on odd ones), then arm.

    Give it `order_tasks(...)`: a partial run then stays balanced across arms and repeats, and each
    scenario's episodes run together (see the module docstring)."""
    for repeat in range(repeats):
        for task in (tasks if repeat % 2 == 0 else reversed(tasks)):
            s = episode_seed(seed, task.scenario, task.task_idx, repeat)
            for arm in arms:
                yield EpisodeSpec(arm=arm.name, scenario=task.scenario, task_idx=task.task_idx,
                                  repeat=repeat, seed=s)


def split(total: int, parts: int) -> list[int]:
    """`total` as `parts` near-equal positive integers."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def plan_shuffled(tasks: Sequence[Task], arms: Sequence[ArmConfig], *, repeats: int,
                  seed: int) -> Iterator[EpisodeSpec]:
    """`--until-decided`: repeat-major, tasks in a random order drawn from `seed` (a fresh one per
    repeat), arms innermost. Any prefix is a random sample of tasks, so a test that stops early
    has not looked at the first scenarios only; the order depends only on the seed and the keys."""
    for repeat in range(repeats):
        order = sorted(tasks, key=lambda t: hashlib.blake2b(f"{seed}:{repeat}:{t.scenario}:{t.task_idx}".encode(),
                                                            digest_size=8).digest())
        for task in order:
            s = episode_seed(seed, task.scenario, task.task_idx, repeat)
            for arm in arms:
                yield EpisodeSpec(arm=arm.name, scenario=task.scenario, task_idx=task.task_idx,
                                  repeat=repeat, seed=s)


# Measured (docs/runs.md, awm-bench scale): the full stack costs one loop about 0.01 CPU-s per
# episode (about 2 ms per model call on the direct transport), so a loop saturates near 500 calls/s.
# 1,000 episodes at 5 s (200 calls/s) ran at 85% of ideal with a loop lag p99 of 20 ms; 512 per
# shard keeps a loop under half a core at 2 s latency.
EPISODES_PER_SHARD = 512
def resolve_shards(requested: int | Literal["auto"], concurrency: int, cpus: int | None = None) -> int:
    """How many processes run a run: `auto` adds one per EPISODES_PER_SHARD in flight, up to one less
    than the CPUs (the world workers need a core too: on 2 cores a second shard measured no faster)."""
    if requested != "auto":
        return max(1, min(int(requested), concurrency))
    cpus = cpus or os.cpu_count() or 1
    return max(1, min(cpus - 1, math.ceil(concurrency / EPISODES_PER_SHARD)))
