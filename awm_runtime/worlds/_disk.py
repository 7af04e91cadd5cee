"""How much disk a scenario's files may take: its quota, sized from its template and the episodes in flight.

A scenario's tmpfs (`isolation._mounts`) holds its build, its imports and one DB per open episode, so the
room it needs grows with the episodes of it a run keeps open at once. `size=` is a limit the kernel
enforces, not memory set aside: a generous quota costs nothing until files fill it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

AUTO_FLOOR_MIB = 256  # the least an automatically sized quota gives a scenario
SCRATCH_MIB = 64  # its build, its imports, SQLite's temporary files
EPISODE_SLACK_BYTES = 64 << 10  # an episode's journal and WAL beside its DB


def quota_mib(template_bytes: int, in_flight: int) -> int:
    """The quota a scenario needs to hold `in_flight` episode DBs cloned from a `template_bytes` template, each
    with room to grow by half, plus SCRATCH_MIB; at least AUTO_FLOOR_MIB."""
    per_episode = template_bytes * 3 // 2 + EPISODE_SLACK_BYTES
    return max(AUTO_FLOOR_MIB, -(-max(in_flight, 1) * per_episode // (1 << 20)) + SCRATCH_MIB)


def episodes_fit(quota: int, template_bytes: int) -> int:
    """About how many episodes a quota of `quota` MiB holds at once, at what `quota_mib` allows each (an upper
    estimate: it leaves nothing for the build and imports)."""
    per_episode = template_bytes * 3 // 2 + EPISODE_SLACK_BYTES
    return (quota << 20) // per_episode


def in_flight_by_scenario(scenarios: Iterable[str], episodes_per_task: int, concurrency: int) -> dict[str, int]:
    """The most episodes of each scenario a run can have open at once: its tasks' episodes, at most `concurrency`.

    `scenarios` holds one scenario id per selected task."""
    return {s: min(concurrency, n * episodes_per_task) for s, n in Counter(scenarios).items()}
