"""Stopping our helper processes: a signal never reaps a child behind asyncio's child watcher.

`Popen.send_signal` (behind `Process.kill()`/`terminate()`) polls first; when the child has just ended, that
poll reaps it, the watcher's own wait finds no child, and it writes "Unknown child process pid N, will report
returncode 255" to stderr (a sharded run's shard log, issue 31's CI failure) and reports 255."""

from __future__ import annotations

import asyncio
import signal
import sys

import pytest

from awm_runtime.isolation import kill_process, signal_process


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
