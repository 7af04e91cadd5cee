"""The runtime's handle on the world zygote: how a worker ended, a zygote that cannot start, the workers it
starts for us (a cancelled start included) and the disk-quota mounts it makes. A zygote that died and is started
again is in test_fault_isolation.py."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from awm_runtime import WorldError
from awm_runtime.worlds._world_zygote import Zygote, exit_text

MODULE = "awm_runtime.worlds._world_worker"
LIMITS = {"memory_mb": 512, "cpu_s": 30, "file_mb": 16, "open_files": 64}


def ended(*args: str) -> int:
    proc = subprocess.Popen([sys.executable, "-c", *args])
    return os.waitpid(proc.pid, 0)[1]


def test_how_a_process_ended_in_words() -> None:
    assert exit_text(None) == "exit status unknown"
    assert exit_text(ended("raise SystemExit(3)")) == "exit code 3"
    assert exit_text(ended("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")) == "killed by SIGKILL"
    assert exit_text(100) == "killed by signal 100"  # a signal number Python has no name for


async def test_a_zygote_that_does_not_start_is_a_world_error_and_frees_its_lock(tmp_path: Path) -> None:
    zygote = Zygote("json.tool", False)  # a module that never says hello
    try:
        for _ in range(2):  # the failed start released the lock: a second try fails the same way, not hangs
            with pytest.raises(WorldError, match=r"^the world zygote did not start$"):
                await zygote.spawn({"dir": str(tmp_path), "limits": LIMITS})
        with pytest.raises(WorldError, match="did not start"):
            await zygote.mount(str(tmp_path), 8)
        assert await zygote.status(1) is None
    finally:
        await zygote.aclose()


async def test_workers_and_mounts_of_one_zygote(tmp_path: Path) -> None:
    zygote = Zygote(MODULE, False)
    spec = {"dir": str(tmp_path), "limits": LIMITS}
    try:
        path = await zygote.mount(str(tmp_path), 8)
        if zygote.hello.get("quota_off"):  # no mount namespace on this host: no quota, and the hello says why
            assert path is None
        else:
            assert path is not None and await asyncio.to_thread(Path(path, "episodes").is_dir)
            with pytest.raises(WorldError, match=r"^the disk quota of .*/nowhere could not be set up \(.*\)$"):
                await zygote.mount(str(tmp_path / "nowhere"), 8, resize=True)
        # a worker whose request pipe closes exits, and the zygote says how, once
        pid, fds = await zygote.spawn(spec)
        for fd in fds:
            os.close(fd)
        assert exit_text(await zygote.status(pid)) == "exit code 0"
        assert await zygote.status(pid) is None
        # a spawn cancelled while the zygote starts the worker: the worker that arrives anyway is killed
        task = asyncio.ensure_future(zygote.spawn(spec))
        await asyncio.sleep(0)  # the task runs up to the exchange with the zygote
        assert zygote.lock.locked()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        async with zygote.lock:  # free again once that exchange is over
            pass
        pid, fds = await zygote.spawn(spec)  # and the control socket is still in step
        for fd in fds:
            os.close(fd)
        assert exit_text(await zygote.status(pid)) == "exit code 0"
    finally:
        await zygote.aclose()
    assert not zygote.alive and await zygote.status(pid) is None
    assert zygote.namespaces == [] and zygote.root is None
