"""The open-file limit: every in-flight model call is a socket, and a default shell allows 1,024 files.

At start, the soft RLIMIT_NOFILE is raised to the hard limit (children inherit it: shards, world
workers, a model server started by a bench). If even the hard limit is too low for the episodes in
flight, one line says so, with the fix.
"""

from __future__ import annotations

# Files a run holds whatever its size: logs, world workers' sockets and pipes, the verifier server,
# the interpreter's own. Each in-flight episode adds about one (its model call's socket).
BASE_FILES = 512
FILES_PER_EPISODE = 1


def needed_files(concurrency: int) -> int:
    """Open files a run with `concurrency` episodes in flight may hold at its peak."""
    return BASE_FILES + FILES_PER_EPISODE * concurrency


def raise_open_files(concurrency: int) -> str | None:
    """Raise the soft open-file limit to the hard limit; a one-line warning if it is still below what
    `concurrency` episodes need, else None."""
    try:
        import resource
    except ImportError:  # not a POSIX system: nothing to raise
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, needed_files(concurrency))
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    need = needed_files(concurrency)
    if soft != resource.RLIM_INFINITY and soft < need:
        return (f"the open-file limit is {soft} (hard limit {hard if hard != resource.RLIM_INFINITY else 'none'}), "
                f"below the ~{need} that {concurrency} episodes in flight may need: calls may fail with "
                f"'Too many open files'; raise it (ulimit -Hn {need}, as root or in limits.conf) or lower "
                f"--concurrency")
    return None
