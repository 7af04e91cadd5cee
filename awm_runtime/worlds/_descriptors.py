"""A world worker's file descriptors, counted without /proc (which confined scenario code cannot read): which are
open, whether the worker is near its limit, and pointing those its scenario's import left open at /dev/null."""

from __future__ import annotations

import contextlib
import os
import resource

FD_MARGIN = 8  # a worker near its descriptor limit: its own use (pipes, kept connections, threads) stays far below


def open_fds() -> set[int]:
    """The descriptors open in this process, found without /proc (which confined code cannot read)."""
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    out = set()
    for fd in range(min(limit, 1 << 16)):
        try:
            os.fstat(fd)
        except OSError:
            continue
        out.add(fd)
    return out


def descriptors_exhausted() -> str:
    """`N of LIMIT open` when this process is within `FD_MARGIN` descriptors of its limit, else ""."""
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    used = len(open_fds())
    return f"{used} of {limit} open" if used >= limit - FD_MARGIN else ""


def blank_fds(fds: set[int]) -> int:
    """Point each of `fds` at /dev/null (read-only): whatever file it held (the import DB, a template opened
    read-write, a dup of either) is out of reach, and the number stays taken, so a stale SQLite handle never
    writes into a file opened later under the same number."""
    if not fds:
        return 0
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        for fd in fds - {null}:
            with contextlib.suppress(OSError):
                os.dup2(null, fd)
    finally:
        os.close(null)
    return len(fds)
