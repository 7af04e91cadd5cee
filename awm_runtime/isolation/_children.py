"""Plumbing for the processes that run untrusted code: a scrubbed environment, death with the
parent, protocol file descriptors, and stopping them."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING

from awm_runtime.isolation import _coverage as coverage

if TYPE_CHECKING:  # not imported at run time: the verifier server and the world zygote never need it
    import asyncio

_SAFE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT")


def die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this process when the runtime dies, even if it is stuck in untrusted code."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(0)


def module_code(module: str) -> str:
    """`python -I -c` code that runs `module` as __main__ from this process's own copy of the package: -I ignores
    PYTHONPATH, and an editable install's finder maps the package to the install's folder, so `-I -m` would run
    the install's copy under a runtime imported from another checkout (the world zygote, the verifier server)."""
    import awm_runtime

    root = os.path.dirname(os.path.dirname(os.path.abspath(awm_runtime.__file__)))
    return (f"import sys, runpy; sys.path.insert(0, {root!r}); "
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")


def protocol_fds() -> tuple[int, int]:
    """Keep stdin/stdout for frames; point fds 0/1 elsewhere so stray prints land on stderr."""
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    return in_fd, out_fd


def scrubbed_env() -> dict[str, str]:
    """An environment with no keys, tokens or runtime settings: untrusted code gets nothing."""
    env = {k: v for k, v in os.environ.items() if k in _SAFE_ENV_KEYS}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(coverage.environment())  # only while a test run measures this process: it measures them too
    return env


def signal_process(proc: asyncio.subprocess.Process, sig: int = signal.SIGKILL) -> None:
    """Send `sig` to an asyncio child unless it is known to have ended.

    Never `proc.kill()`, `terminate()` or `send_signal()`: `Popen.send_signal` polls first, and a poll
    that finds the child just ended reaps it under asyncio's child watcher, which then writes
    "Unknown child process pid N, will report returncode 255" to stderr and reports 255."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)


_TICK_S = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a live process has used, from /proc/PID/stat; 0.0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK_S
    except (OSError, ValueError, IndexError):
        return 0.0


def kill_process(proc: asyncio.subprocess.Process, *, release: bool = False) -> None:
    """SIGKILL; with `release`, also close the pipes now (a sync close may outlive the event loop)."""
    signal_process(proc)
    if release:
        with contextlib.suppress(Exception):
            proc._transport.close()  # type: ignore[attr-defined]


async def stop_process(proc: asyncio.subprocess.Process, *, farewell: bytes = b"", grace_s: float = 2.0) -> None:
    """Ask a helper to exit (send `farewell`, close its stdin), then SIGKILL it after `grace_s`."""
    import asyncio

    if proc.returncode is None and proc.stdin is not None:
        with contextlib.suppress(Exception):
            if farewell:
                proc.stdin.write(farewell)
            proc.stdin.close()
    try:
        await asyncio.wait_for(proc.wait(), grace_s)
    except TimeoutError:
        kill_process(proc)
        await proc.wait()
