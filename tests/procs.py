"""Process helpers for tests: whether a pid exists or still runs, and waiting until it does not."""

from __future__ import annotations

import os
import time
from pathlib import Path


def exists(pid: int) -> bool:
    """True while `pid` exists, a zombie included: for checks that its parent reaped it, not only stopped it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def alive(pid: int) -> bool:
    """True while `pid` runs: not gone, and not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def process_gone(pid: int, within_s: float = 10.0) -> bool:
    """True once `pid` no longer runs (gone, or a zombie), waiting up to `within_s` seconds for it."""
    deadline = time.monotonic() + within_s
    while alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True
