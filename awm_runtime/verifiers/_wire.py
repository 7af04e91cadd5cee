"""Length-prefixed JSON frames between the runtime and its helper processes, and their plumbing.

JSON, never pickle: the other end runs untrusted code, and unpickling its output would hand it
the runtime. Frames are a 4-byte big-endian length followed by an orjson body.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import struct
import sys
from typing import Any

import orjson

HEADER = struct.Struct(">I")
_SAFE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT")
MAX_FRAME = 64 << 20  # a tool result or verifier evidence larger than this is a broken world


class FrameError(Exception):
    """The other end sent something that is not a frame (too large, or not JSON)."""


def encode(obj: Any) -> bytes:
    body = orjson.dumps(obj, default=str, option=orjson.OPT_NON_STR_KEYS)
    return HEADER.pack(len(body)) + body


def decode(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise FrameError(f"frame is not JSON ({exc})") from None


async def read_frame(reader: asyncio.StreamReader) -> Any:
    """One frame from an asyncio stream; IncompleteReadError at EOF."""
    (size,) = HEADER.unpack(await reader.readexactly(HEADER.size))
    if size > MAX_FRAME:
        raise FrameError(f"frame of {size} bytes exceeds the {MAX_FRAME}-byte limit")
    return decode(await reader.readexactly(size))


def read_exact(fd: int, n: int) -> bytes | None:
    """Exactly n bytes from a blocking fd, or None at EOF."""
    chunks: list[bytes] = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame_fd(fd: int) -> Any | None:
    """One frame from a blocking fd, or None at EOF."""
    head = read_exact(fd, HEADER.size)
    if head is None:
        return None
    (size,) = HEADER.unpack(head)
    if size > MAX_FRAME:
        raise FrameError(f"frame of {size} bytes exceeds the {MAX_FRAME}-byte limit")
    body = read_exact(fd, size)
    return None if body is None else decode(body)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this process when the runtime dies, even if it is stuck in untrusted code."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(0)


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
    return env


def kill_process(proc: asyncio.subprocess.Process, *, release: bool = False) -> None:
    """SIGKILL; with `release`, also close the pipes now (a sync close may outlive the event loop)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGKILL)
    if release:
        with contextlib.suppress(Exception):
            proc._transport.close()  # type: ignore[attr-defined]


async def stop_process(proc: asyncio.subprocess.Process, *, farewell: bytes = b"", grace_s: float = 2.0) -> None:
    """Ask a helper to exit (send `farewell`, close its stdin), then SIGKILL it after `grace_s`."""
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
