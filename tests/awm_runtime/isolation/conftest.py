"""Isolation helpers: where a process stands in the CPU scheduler."""

from __future__ import annotations

import os
from pathlib import Path

from awm_runtime.isolation._confine import DATASET_NICENESS


def nice_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2:].split()[16])


def autogroup_of(pid: int) -> tuple[str, int] | None:
    """(group, nice) from /proc/<pid>/autogroup, or None where the kernel has no autogroup."""
    try:
        group, _, nice = Path(f"/proc/{pid}/autogroup").read_text().split()
    except OSError:
        return None
    return group, int(nice)


def assert_below_the_runtime(pid: int) -> None:
    assert nice_of(pid) == min(19, nice_of(os.getpid()) + DATASET_NICENESS)  # 19 is the lowest
    if (mine := autogroup_of(os.getpid())) is not None:
        theirs = autogroup_of(pid)
        assert theirs is not None and theirs[0] != mine[0]  # its own session, so its own group
        assert theirs[1] == DATASET_NICENESS
