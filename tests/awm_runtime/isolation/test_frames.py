"""Frames between the runtime and the processes behind the boundary: what a broken or hostile other end sends."""

from __future__ import annotations

import asyncio
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awm_runtime.isolation import (
    HEADER,
    MAX_FRAME,
    FdFrames,
    FrameError,
    Frames,
    decode,
    encode,
    read_frame,
    read_frame_fd,
    write_all,
)

_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
                       lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                                   max_size=4), max_leaves=12)


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


@settings(max_examples=200, deadline=None)
@given(values=st.lists(_VALUES, max_size=6), cuts=st.lists(st.integers(0, 400), max_size=12))
def test_frames_come_out_whole_and_in_order_however_the_stream_is_cut(values: list[object], cuts: list[int]) -> None:
    """A pipe's reads may split a frame anywhere, or hold several: the parser gives each frame once, in order."""
    stream = b"".join(encode(v) for v in values)
    frames, out, start = Frames(), [], 0
    for end in sorted({min(c, len(stream)) for c in cuts} | {len(stream)}):
        out += frames.feed(stream[start:end])
        start = end
    assert out == values and frames.held == 0


def test_the_frame_parser_refuses_an_oversized_or_non_json_frame_and_keeps_a_partial_one() -> None:
    frames = Frames()
    assert list(frames.feed(encode({"a": 1})[:5])) == [] and frames.held == 5
    with pytest.raises(FrameError, match="exceeds"):
        list(Frames().feed(HEADER.pack(MAX_FRAME + 1)))
    got = []
    with pytest.raises(FrameError, match="exceeds"):
        for frame in Frames().feed(encode(1) + HEADER.pack(MAX_FRAME + 1)):
            got.append(frame)
    assert got == [1]  # the whole frame before the bad one, in the same chunk, is given first
    with pytest.raises(FrameError, match="not JSON"):
        list(Frames().feed(HEADER.pack(5) + b"{nope"))


def test_a_blocking_fd_reader_gives_frames_written_together_and_eof() -> None:
    fd = _pipe_with(encode({"ok": True, "n": 1}) + encode([1, 2]) + encode("x")[:-1])
    try:
        frames = FdFrames(fd, chunk=7)  # small reads: the frames arrive cut
        assert [frames.read(), frames.read()] == [{"ok": True, "n": 1}, [1, 2]]
        assert frames.read() is None  # a frame cut short by EOF
    finally:
        os.close(fd)


def test_a_blocking_fd_reader_gives_the_frames_before_a_bad_one_then_refuses() -> None:
    fd = _pipe_with(encode([1]) + b"\x00\x00\x00\x03{x}" + encode([2]))
    try:
        frames = FdFrames(fd)
        assert frames.read() == [1]
        with pytest.raises(FrameError, match="not JSON"):
            frames.read()
        with pytest.raises(FrameError):
            frames.read()  # nothing after it
    finally:
        os.close(fd)


def test_a_blocking_fd_reader_reads_a_small_frame_in_one_read() -> None:
    """Frames written whole are taken in one read each (not a header's and a body's), and frames that arrived
    together in one read, the later ones with no read at all."""
    read_end, write_end = os.pipe()
    try:
        write_all(write_end, encode({"op": "call", "args": {"x": 1}}) + encode({"op": "exit"}))
        frames = FdFrames(read_end)
        assert frames.read() == {"op": "call", "args": {"x": 1}}
        os.set_blocking(read_end, False)
        with pytest.raises(BlockingIOError):  # the pipe is empty: the first read took both frames
            os.read(read_end, 1)
        assert frames.read() == {"op": "exit"}
    finally:
        os.close(read_end)
        os.close(write_end)
