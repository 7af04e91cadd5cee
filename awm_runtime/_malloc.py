"""The C allocator, set for a process that runs episodes for hours: a fixed mmap threshold.

glibc serves a request of `M_MMAP_THRESHOLD` bytes or more (128 KiB to start) with its own mapping, given back to
the kernel when freed. By default the threshold moves: each time such a block is freed, it rises to that block's
size (up to 32 MiB), so later blocks of that size come from the heap instead. In the runtime's process the heap
then grew with the run while what it held did not (issue 49, 10,000 episodes on the simulated oracle at 64 in
flight, sampled every 2,000 after a collection: bytes in use by malloc 11.2 -> 10.9 MiB, Python's blocks flat,
but the heap 17.9 -> 20.3 MiB and its free space 6.6 -> 9.4 MiB; RSS +207 B an episode, +129 B after a
`malloc_trim(0)` at each sample). Set explicitly, the threshold stays put (setting it turns the moving off):
large blocks keep their own mappings and go back to the kernel when freed. See docs/runs.md (`awm-bench long`).

Only glibc has `mallopt` with these meanings; elsewhere (musl, macOS) nothing is changed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
MMAP_THRESHOLD = 128 * 1024  # glibc's starting value, now fixed

_applied: bool | None = None


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    gnu = getattr(libc, "gnu_get_libc_version", None)
    return libc if gnu is not None and hasattr(libc, "mallopt") else None


def steady_malloc() -> bool:
    """Fix glibc's mmap threshold at `MMAP_THRESHOLD`, once a process (later calls return the first answer).
    True when set; False where the C library is not glibc or refused. Process-wide and never undone: a fixed
    threshold is glibc's own behaviour before a large block is first freed."""
    global _applied
    if _applied is None:
        libc = _libc()
        _applied = bool(libc is not None and libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1)
    return _applied


def applied() -> bool | None:
    """What `steady_malloc` answered in this process; None when nothing has asked for it yet."""
    return _applied


__all__ = ["MMAP_THRESHOLD", "M_MMAP_THRESHOLD", "applied", "steady_malloc"]
