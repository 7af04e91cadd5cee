"""A world worker's request pipe: read by one thread at a time, and by a reader thread beside a stuck call in place."""

from __future__ import annotations

import os
import threading
from typing import Any

from awm_runtime.isolation import encode, write_all
from awm_runtime.worlds._requests import Requests


def test_a_reader_beside_a_stuck_call_hands_calls_and_other_requests_on_until_that_call_ends() -> None:
    read_end, write_end = os.pipe()
    calls: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    here = threading.Event()
    here.set()  # a call runs in place, stuck
    got = threading.Semaphore(0)

    def submit(msg: dict[str, Any]) -> None:
        calls.append(msg)
        got.release()

    def answer(msg: dict[str, Any]) -> None:
        others.append(msg)
        got.release()

    requests = Requests(read_end, submit=submit, answer=answer, running_here=here.is_set, failed=repr)
    try:
        requests.read_beside()
        requests.read_beside()  # reported again: still one reader
        write_all(write_end, encode({"op": "call", "id": 1}) + encode({"op": "ping", "id": 2}))
        assert got.acquire(timeout=30) and got.acquire(timeout=30)
        assert calls == [{"op": "call", "id": 1}] and others == [{"op": "ping", "id": 2}]
        assert requests.readers == 1 and requests.beside
        here.clear()  # the call in place ended: the reader leaves after the next request it reads
        write_all(write_end, encode({"op": "call", "id": 3}))
        assert got.acquire(timeout=30)
        for _ in range(3000):
            if not requests.beside:
                break
            threading.Event().wait(0.01)
        assert not requests.beside
        write_all(write_end, encode({"op": "call", "id": 4}))
        assert requests.next() == {"op": "call", "id": 4}  # the main thread reads again
        assert [c["id"] for c in calls] == [1, 3]
    finally:
        os.close(write_end)
        os.close(read_end)


def _worker_status(data: bytes, *, close: bool) -> int:
    """Exit status of a fork whose main thread is stuck in a call in place while its reader beside reads `data`
    (then EOF if `close`)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the fork: its reader ends it
        os.close(write_end)
        requests = Requests(read_end, submit=lambda m: None, answer=lambda m: None, running_here=lambda: True,
                            failed=repr)
        requests.read_beside()
        threading.Event().wait(60)  # the call in place, hung
        os._exit(99)
    os.close(read_end)
    write_all(write_end, data)
    if close:
        os.close(write_end)
    _, status = os.waitpid(pid, 0)
    if not close:
        os.close(write_end)
    return os.waitstatus_to_exitcode(status)


def test_the_reader_beside_ends_the_worker_at_eof_or_exit_with_its_call_still_hung() -> None:
    assert _worker_status(encode({"op": "call", "id": 1}), close=True) == 0  # the runtime is gone
    assert _worker_status(encode({"op": "exit", "id": 0}), close=False) == 0  # asked to exit


def test_the_reader_beside_ends_the_worker_on_a_broken_request_pipe() -> None:
    assert _worker_status(b"\x00\x00\x00\x03{x}", close=False) == 70
