"""The runtime's end of a world worker's reply pipe: replies handed on as they arrive, and why the pipe ended."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from awm_runtime.isolation import HEADER, MAX_FRAME, encode, write_all
from awm_runtime.worlds._world_worker_handle import _Replies


async def _listen(on_reply: Any) -> tuple[int, asyncio.Future[str], asyncio.BaseTransport]:
    """A pipe whose read end feeds a `_Replies`; returns its write end, the `closed` future and the transport."""
    read_end, write_end = os.pipe()
    loop = asyncio.get_running_loop()
    closed: asyncio.Future[str] = loop.create_future()
    transport, _ = await loop.connect_read_pipe(lambda: _Replies(on_reply, closed), os.fdopen(read_end, "rb", 0))
    return write_end, closed, transport


async def test_replies_are_handed_on_whole_and_in_order_however_the_pipe_cuts_them() -> None:
    got: list[Any] = []
    write_end, closed, _ = await _listen(got.append)
    try:
        write_all(write_end, encode({"id": 1}) + encode({"id": 2}))  # two replies in one read
        second = encode({"id": 3, "text": "x" * 100})
        write_all(write_end, second[:3])  # a reply cut inside its header...
        await asyncio.sleep(0.05)
        write_all(write_end, second[3:])  # ...and completed later
    finally:
        os.close(write_end)
    assert await asyncio.wait_for(closed, 5) == "IncompleteReadError"  # EOF: the worker is gone
    assert got == [{"id": 1}, {"id": 2}, {"id": 3, "text": "x" * 100}]


async def test_a_reply_pipe_that_sends_what_is_not_a_frame_is_closed_as_a_broken_worker() -> None:
    got: list[Any] = []
    write_end, closed, transport = await _listen(got.append)
    try:
        write_all(write_end, encode({"id": 1}) + HEADER.pack(MAX_FRAME + 1) + encode({"id": 2}))
        assert await asyncio.wait_for(closed, 5) == "FrameError"
        assert transport.is_closing() and got == [{"id": 1}]  # nothing after the bad frame is read
    finally:
        os.close(write_end)


async def test_a_reply_the_runtime_cannot_take_ends_the_pipe_with_its_reason() -> None:
    def on_reply(reply: Any) -> None:
        float(reply["cpu_s"])  # as the handle reads a reply's CPU figure

    write_end, closed, _ = await _listen(on_reply)
    try:
        write_all(write_end, encode({"id": 1, "cpu_s": "lots"}))
        assert await asyncio.wait_for(closed, 5) == "ValueError"
    finally:
        os.close(write_end)
