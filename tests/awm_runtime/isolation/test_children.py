"""Stopping our helper processes: a signal never reaps a child behind asyncio's child watcher.

`Popen.send_signal` (behind `Process.kill()`/`terminate()`) polls first; when the child has just ended, that
poll reaps it, the watcher's own wait finds no child, and it writes "Unknown child process pid N, will report
returncode 255" to stderr (a sharded run's shard log, issue 31's CI failure) and reports 255."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from awm_runtime.isolation import (
    die_with_parent,
    encode,
    kill_process,
    scrubbed_env,
    signal_process,
    stop_process,
)


async def test_signalling_a_child_that_just_ended_does_not_reap_it(monkeypatch: pytest.MonkeyPatch) -> None:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "import sys; sys.stdin.read()",
                                                stdin=asyncio.subprocess.PIPE)
    popen = proc._transport._proc  # type: ignore[attr-defined]

    def poll() -> None:
        raise AssertionError("polled: that would reap the child behind the child watcher")

    monkeypatch.setattr(popen, "poll", poll)
    signal_process(proc, signal.SIGTERM)
    assert await proc.wait() == -signal.SIGTERM  # the watcher reaped it and reports its real status
    kill_process(proc)  # known to have ended: nothing is sent, nothing polled
    signal_process(proc)
    monkeypatch.undo()
    proc._transport.close()  # type: ignore[attr-defined]


async def test_kill_process_ends_a_child_that_ignores_sigterm() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)")
    kill_process(proc)
    assert await asyncio.wait_for(proc.wait(), 10) == -signal.SIGKILL


async def test_stop_process_says_farewell_and_waits_for_the_exit() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; sys.exit(0 if sys.stdin.buffer.read() == b'bye' else 3)",
        stdin=asyncio.subprocess.PIPE)
    await stop_process(proc, farewell=b"bye", grace_s=30)
    assert proc.returncode == 0


async def test_stop_process_kills_a_helper_that_will_not_go() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import time; time.sleep(60)", stdin=asyncio.subprocess.PIPE)
    await stop_process(proc, grace_s=0.1)
    assert proc.returncode == -signal.SIGKILL
    await stop_process(proc)  # already ended: nothing to do


def test_a_helper_whose_runtime_is_gone_ends_itself() -> None:
    """`die_with_parent` with a parent that is no longer its parent: the process exits at once, before any
    untrusted code; with its real parent, it is killed when that parent dies."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the fork
        die_with_parent(os.getppid() + 100_000)
        os._exit(7)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    script = ("import os, sys, time\nfrom awm_runtime.isolation import die_with_parent\nparent = os.getpid()\n"
              "pid = os.fork()\nif pid == 0:\n    die_with_parent(parent)\n    time.sleep(60)\n    os._exit(0)\n"
              "print(pid, flush=True)\ntime.sleep(0.3)\n")
    middle = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    orphan = int(middle.stdout)
    deadline = time.monotonic() + 30  # a failure cut-off, not a timing: the kernel kills it as the parent ends
    while _alive(orphan) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(orphan)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_protocol_fds_keep_the_frames_apart_from_stray_prints() -> None:
    script = ("import os\nfrom awm_runtime.isolation import encode, protocol_fds, write_all\n"
              "in_fd, out_fd = protocol_fds()\nprint('stray')\nwrite_all(out_fd, encode(os.read(in_fd, 5).decode()))\n")
    proc = subprocess.run([sys.executable, "-c", script], input=b"hello", capture_output=True, timeout=60, check=True)
    assert proc.stdout == encode("hello") and b"stray" in proc.stderr


def test_a_scrubbed_environment_has_no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-nope")
    monkeypatch.setenv("LANG", "C.UTF-8")
    env = scrubbed_env()
    assert "OPENAI_API_KEY" not in env and env["LANG"] == "C.UTF-8" and env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT", "PYTHONDONTWRITEBYTECODE",
                        "COVERAGE_PROCESS_CONFIG"}
