"""Frames between the runtime and the processes behind the boundary: what a broken or hostile other end sends."""

from __future__ import annotations

import asyncio
import os

import pytest

from awm_runtime.isolation import HEADER, MAX_FRAME, FrameError, decode, encode, read_frame, read_frame_fd, write_all


def _pipe_with(data: bytes) -> int:
    """The read end of a pipe that holds `data` and is then closed."""
    read_end, write_end = os.pipe()
    write_all(write_end, data)
    os.close(write_end)
    return read_end


def test_a_frame_goes_through_a_pipe_whole() -> None:
    fd = _pipe_with(encode({"ok": True, "n": 1}) + encode([1, 2]))
    try:
        assert read_frame_fd(fd) == {"ok": True, "n": 1}
        assert read_frame_fd(fd) == [1, 2]
        assert read_frame_fd(fd) is None  # EOF between frames
    finally:
        os.close(fd)


@pytest.mark.parametrize("data", [b"", b"\x00\x00", encode({"a": 1})[:-3]], ids=["nothing", "half a header",
                                                                              "cut body"])
def test_a_frame_cut_short_is_eof(data: bytes) -> None:
    fd = _pipe_with(data)
    try:
        assert read_frame_fd(fd) is None
    finally:
        os.close(fd)


def test_an_oversized_or_non_json_frame_is_a_frame_error() -> None:
    fd = _pipe_with(HEADER.pack(MAX_FRAME + 1))
    try:
        with pytest.raises(FrameError, match="exceeds"):
            read_frame_fd(fd)
    finally:
        os.close(fd)
    with pytest.raises(FrameError, match="not JSON"):
        decode(b"{nope")


async def test_an_asyncio_reader_refuses_the_same_frames() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(encode({"x": "é"}) + HEADER.pack(MAX_FRAME + 1))
    assert await read_frame(reader) == {"x": "é"}
    with pytest.raises(FrameError, match="exceeds"):
        await read_frame(reader)
    reader = asyncio.StreamReader()
    reader.feed_data(HEADER.pack(4) + b"[1,")
    reader.feed_eof()
    with pytest.raises(asyncio.IncompleteReadError):
        await read_frame(reader)


def test_a_large_frame_is_written_whole_through_a_small_pipe() -> None:
    """write_all keeps writing what the pipe took only in part (a pipe holds 64 KiB)."""
    read_end, write_end = os.pipe()
    payload = encode({"blob": "x" * (1 << 20)})
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the fork, which only writes
        os.close(read_end)
        write_all(write_end, payload)
        os._exit(0)
    os.close(write_end)
    try:
        assert read_frame_fd(read_end) == {"blob": "x" * (1 << 20)}
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
