"""Length-prefixed JSON frames between the runtime and the processes that run untrusted code.

JSON, never pickle: the other end runs untrusted code, and unpickling its output would hand it
the runtime. A frame is a 4-byte big-endian length followed by an orjson body.
"""

from __future__ import annotations

import os
import struct
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:  # only an annotation: the processes that run untrusted code do not import asyncio
    import asyncio

HEADER = struct.Struct(">I")
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
