"""Isolation helpers: where a process stands in the CPU scheduler."""

from __future__ import annotations

import os
from pathlib import Path

from awm_runtime.isolation._confine import DATASET_NICENESS


def nice_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2:].split()[16])


def autogroup_of(pid: int) -> tuple[str, int] | None:
    """(group, nice) from /proc/<pid>/autogroup, or None where the kernel reports none for it: no autogroup
    support (no file), or a process left in the default group (an empty file, as on some CI machines)."""
    try:
        fields = Path(f"/proc/{pid}/autogroup").read_text().split()
    except OSError:
        return None
    if not fields:
        return None
    group, _, nice = fields
    return group, int(nice)


def assert_below_the_runtime(pid: int) -> None:
    assert nice_of(pid) == min(19, nice_of(os.getpid()) + DATASET_NICENESS)  # 19 is the lowest
    if (theirs := autogroup_of(pid)) is not None:
        mine = autogroup_of(os.getpid())
        assert mine is None or theirs[0] != mine[0]  # its own session, so its own group
        assert theirs[1] == DATASET_NICENESS
