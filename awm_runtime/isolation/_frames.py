"""Length-prefixed JSON frames between the runtime and the processes that run untrusted code.

JSON, never pickle: the other end runs untrusted code, and unpickling its output would hand it
the runtime. A frame is a 4-byte big-endian length followed by an orjson body.
"""

from __future__ import annotations

import os
import struct
from collections import deque
from collections.abc import Iterator
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


def decode(body: bytes | bytearray | memoryview) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise FrameError(f"frame is not JSON ({exc})") from None


def _body_size(head: bytes | bytearray) -> int:
    """The size a frame's header (at the start of `head`) announces; FrameError past `MAX_FRAME`."""
    (size,) = HEADER.unpack_from(head)
    if size > MAX_FRAME:
        raise FrameError(f"frame of {size} bytes exceeds the {MAX_FRAME}-byte limit")
    return size


async def read_frame(reader: asyncio.StreamReader) -> Any:
    """One frame from an asyncio stream; IncompleteReadError at EOF."""
    size = _body_size(await reader.readexactly(HEADER.size))
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
    body = read_exact(fd, _body_size(head))
    return None if body is None else decode(body)


class Frames:
    """Frames parsed out of a byte stream that arrives in chunks of any size (a pipe's reads).

    A chunk that is exactly one frame (what one `encode` written in one write usually arrives as) is decoded in
    place; only a frame split across chunks, or chunks holding several, is copied out of the kept bytes."""

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = bytearray()

    @property
    def held(self) -> int:
        """Bytes kept of a frame not yet whole."""
        return len(self._buf)

    def feed(self, data: bytes) -> Iterator[Any]:
        """The frames that `data` completes, decoded, in order; FrameError (once the frames before it are given)
        on a frame over `MAX_FRAME` or not JSON."""
        buf = self._buf
        if not buf and len(data) >= HEADER.size and len(data) == HEADER.size + _body_size(data):  # one whole frame
            yield decode(memoryview(data)[HEADER.size:])
            return
        buf += data
        while len(buf) >= HEADER.size:
            end = HEADER.size + _body_size(buf)
            if len(buf) < end:
                break
            body = bytes(buf[HEADER.size:end])
            del buf[:end]
            yield decode(body)


class FdFrames:
    """Frames from a blocking fd, read in chunks of up to `chunk` bytes: a small frame costs one read, not two."""

    __slots__ = ("_chunk", "_error", "_fd", "_frames", "_ready")

    def __init__(self, fd: int, chunk: int = 1 << 16) -> None:
        self._fd, self._chunk = fd, chunk
        self._frames = Frames()
        self._ready: deque[Any] = deque()
        self._error: FrameError | None = None

    def read(self) -> Any | None:
        """The next frame, or None at EOF (a frame cut short by it included); FrameError at a frame that is not
        one, once the frames before it are read."""
        while not self._ready:
            if self._error is not None:
                raise self._error
            chunk = os.read(self._fd, self._chunk)
            if not chunk:
                return None
            try:
                for frame in self._frames.feed(chunk):
                    self._ready.append(frame)
            except FrameError as exc:
                self._error = exc
        return self._ready.popleft()


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
