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


def _per_episode(template_bytes: int) -> int:
    """What one open episode may take: its DB cloned from the template, room to grow by half, its journal."""
    return template_bytes * 3 // 2 + EPISODE_SLACK_BYTES


def quota_mib(template_bytes: int, in_flight: int) -> int:
    """The quota a scenario needs to hold `in_flight` episode DBs cloned from a `template_bytes` template, each
    with room to grow by half, plus SCRATCH_MIB; at least AUTO_FLOOR_MIB."""
    return max(AUTO_FLOOR_MIB, -(-max(in_flight, 1) * _per_episode(template_bytes) // (1 << 20)) + SCRATCH_MIB)


def episodes_fit(quota: int, template_bytes: int) -> int:
    """About how many episodes a quota of `quota` MiB holds at once, at what `quota_mib` allows each (an upper
    estimate: it leaves nothing for the build and imports)."""
    return (quota << 20) // _per_episode(template_bytes)


def in_flight_by_scenario(scenarios: Iterable[str], episodes_per_task: int, concurrency: int) -> dict[str, int]:
    """The most episodes of each scenario a run can have open at once: its tasks' episodes, at most `concurrency`.

    `scenarios` holds one scenario id per selected task."""
    return {s: min(concurrency, n * episodes_per_task) for s, n in Counter(scenarios).items()}
