"""A world worker as the runtime meets it: forked by the real zygote, confined, answering frames on its pipes.
What it refuses before any scenario is loaded, how it ends, and a worker that cannot confine itself."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import WorldError
from awm_runtime.isolation import encode, read_frame_fd, write_all
from awm_runtime.worlds._descriptors import blank_fds, open_fds
from awm_runtime.worlds._world_zygote import Zygote

LIMITS = {"memory_mb": 1024, "cpu_s": 30, "file_mb": 64, "open_files": 256}


@pytest.fixture
async def zygote() -> AsyncIterator[Zygote]:
    z = Zygote("awm_runtime.worlds._world_worker", unsafe=False)
    yield z
    await z.aclose()


def _ask(fds: list[int], msg: dict[str, Any]) -> Any:
    write_all(fds[0], encode(msg))
    return read_frame_fd(fds[1])


async def test_a_worker_refuses_what_it_cannot_do_and_exits_when_asked(zygote: Zygote, tmp_path: Path) -> None:
    directory = tmp_path / "scenario"
    (directory / "episodes").mkdir(parents=True)
    pid, fds = await zygote.spawn({"dir": str(directory), "limits": LIMITS})
    try:
        assert _ask(fds, {"op": "ping", "id": 1}) == {"ok": True, "pid": pid, "id": 1, "cpu_s": pytest.approx(0, abs=5)}
        assert _ask(fds, {"op": "dance", "id": 2})["error"] == "unknown op 'dance'"
        outside = str(tmp_path / "elsewhere.db")
        reply = _ask(fds, {"op": "load", "id": 3, "scenario": "s", "code": "", "template": outside})
        refused = "outside this worker's directory"
        assert reply["ok"] is False and reply["stage"] == "import" and refused in reply["error"]
        reply = _ask(fds, {"op": "build", "id": 4, "scenario": "s", "code": "", "template": outside, "tables": [],
                           "inserts": []})
        assert reply["ok"] is False and reply["stage"] == "build" and refused in reply["error"]
        reply = _ask(fds, {"op": "call", "id": 5, "scenario": "s", "db": str(directory / "episodes" / "e.db"),
                           "tool": "t"})
        assert reply == {"ok": False, "error": "scenario 's' is not loaded in this worker", "id": 5,
                         "cpu_s": reply["cpu_s"]}
        write_all(fds[0], encode({"op": "exit", "id": 6}))
        assert read_frame_fd(fds[1]) is None  # it exits: its reply pipe closes
        assert await zygote.status(pid) == 0
    finally:
        for fd in fds:
            os.close(fd)


async def test_a_worker_that_cannot_confine_itself_never_serves(zygote: Zygote, tmp_path: Path) -> None:
    """Limits the OS refuses (2**65 bytes of memory): the worker says why on its stderr pipe and exits 70."""
    pid, fds = await zygote.spawn({"dir": str(tmp_path), "limits": {**LIMITS, "memory_mb": 1 << 45}})
    try:
        assert read_frame_fd(fds[1]) is None
        assert os.read(fds[2], 4096).decode().startswith("world worker failed: OverflowError")
        assert await zygote.status(pid) == 70 << 8
    finally:
        for fd in fds:
            os.close(fd)


async def test_a_quota_the_zygote_cannot_mount_is_a_world_error(zygote: Zygote, tmp_path: Path) -> None:
    await zygote.spawn({"dir": str(tmp_path), "limits": LIMITS})  # started, with its mount namespace
    if zygote.hello.get("quota_off"):  # no mount namespace on this machine: no quota, and it says so
        assert await zygote.mount(str(tmp_path), 4) is None
        return
    with pytest.raises(WorldError, match="could not be set up"):
        await zygote.mount(str(tmp_path / "missing"), 4)
    with pytest.raises(WorldError, match="could not be set up"):
        await zygote.mount(str(tmp_path), 4, resize=True)  # no tmpfs there to resize


def test_descriptors_are_counted_without_proc_and_blanked_in_place(tmp_path: Path) -> None:
    secret = tmp_path / "template.db"
    secret.write_bytes(b"pristine")
    before = open_fds()
    fd = os.open(secret, os.O_RDWR)
    try:
        assert open_fds() - before == {fd}
        assert blank_fds(set()) == 0 and blank_fds({fd}) == 1
        assert os.read(fd, 8) == b""  # /dev/null now: the number stays taken, the file is out of reach
        with pytest.raises(OSError):
            os.write(fd, b"x")
        assert secret.read_bytes() == b"pristine"
    finally:
        os.close(fd)


def test_a_worker_near_its_descriptor_limit_says_how_near() -> None:
    # In a process of its own: this one's other threads (an earlier test's servers and transports, closed by the
    # garbage collector) open and close descriptors at any moment, and a lowered limit would starve them.
    probe = (
        "import resource\n"
        "from awm_runtime.worlds._descriptors import FD_MARGIN, descriptors_exhausted, open_fds\n"
        "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
        "far = descriptors_exhausted()\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (len(open_fds()) + FD_MARGIN - 1, hard))\n"
        "limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]\n"
        "print(repr(far), '|', descriptors_exhausted(), '|', f'{len(open_fds())} of {limit} open')\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    far, near, expected = (part.strip() for part in out.stdout.split("|"))
    assert far == "''" and near == expected and expected.endswith(" open")
