"""The runtime's end of kept workers (`_direct`): a job's frame reads back, in the worker's own reader, as the same
DBs; a result reaches only a job leased to the worker it came from; anything that is not one result within the
bound ends that worker's jobs with the server's words and has it killed; a worker's socket comes once, by
SCM_RIGHTS, and is closed at its EOF. Real sockets, the worker's real reader; no server (see test_warm.py)."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.isolation import HEADER, encode
from awm_runtime.verifiers import Kept
from awm_runtime.verifiers._delta import PAGE
from awm_runtime.verifiers._direct import KeptSockets, job_frame, plan
from awm_runtime.verifiers._outcome import MAX_RESULT, result_frame
from awm_runtime.verifiers._scratch import Scratch
from awm_runtime.verifiers._warm_worker import _KEPT, _SCRATCH, _drop_shared, _read_job


def _as_read(value: Any) -> bytes:
    """A DB as the worker's verifier reads it: a final DB written into its template's store has a new change
    counter (offsets 24 and 92, `_scratch`), every other byte as sent."""
    if not isinstance(value, Scratch):
        return bytes(value)
    data = bytearray(value.bytes())
    assert data[24:28] == data[92:96]
    data[24:28] = data[92:96] = b"CCCC"
    return bytes(data)


def _counter_masked(data: bytes) -> bytes:
    return data[:24] + b"CCCC" + data[28:92] + b"CCCC" + data[96:]


def db(tmp: Path, name: str, rows: int) -> bytes:
    conn = sqlite3.connect(tmp / name)
    conn.execute("CREATE TABLE t (a BLOB)")
    conn.executemany("INSERT INTO t VALUES (?)", [(bytes(900),) for _ in range(rows)])
    conn.commit()
    conn.close()
    return (tmp / name).read_bytes()


@pytest.mark.parametrize("many_pages", [False, True])
def test_a_job_frame_reads_back_as_the_same_dbs_in_the_worker(tmp_path: Path, many_pages: bool) -> None:
    template = db(tmp_path, "i.db", 5000 if many_pages else 40)
    final = bytearray(template + bytes(100))
    for page in range(1, 900 if many_pages else 10, 3):  # 3 changed pages and the last, or 301: joined as one
        final[PAGE * page + 10] ^= 0xFF
    data: dict[str, Any] = {"/t/i.db": Kept("d" * 32, template), "/e/f.db": bytes(final), "/e/x.db": b"small"}
    sent = plan(data, 32 << 20, Kept)
    assert sent.kept == {"/t/i.db": "d" * 32} and sent.deltas and list(sent.whole) == ["/e/x.db"]
    parts = job_frame({"id": 7, "code": "", "function": "f", "kwargs": {}}, sent, {"keep": ["d" * 32], "forget": []})
    assert len(parts) == (4 if many_pages else 7)  # head, template, small DB, the changed pages (joined or not)
    a, b = socket.socketpair()
    try:
        _KEPT.clear()
        writer = threading.Thread(target=a.sendall, args=(b"".join(parts),))  # larger than the socket's buffer
        writer.start()
        job = _read_job(b.fileno())
        writer.join()
    finally:
        a.close()
        b.close()
        _KEPT.clear()
    assert job is not None and job["id"] == 7 and "broken" not in job
    assert job["finals"] == {"/e/f.db": "d" * 32}  # written into the template's store
    assert {p: _as_read(v) for p, v in job["dbs"].items()} == {"/t/i.db": template,
                                                              "/e/f.db": _counter_masked(bytes(final)),
                                                              "/e/x.db": b"small"}
    for digest in list(_SCRATCH):
        _drop_shared(digest)


def test_a_db_that_is_its_template_goes_by_the_templates_digest_and_opens_as_the_template(tmp_path: Path) -> None:
    """An episode that changed nothing: its final DB is named by the template's digest (no bytes, no pages in the
    frame) and the worker opens it as the template (`templates`: its shared read-only copy)."""
    template = db(tmp_path, "i.db", 40)
    data: dict[str, Any] = {"/t/i.db": Kept("d" * 32, template), "/e/f.db": bytes(template)}
    sent = plan(data, 32 << 20, Kept)
    assert sent.kept == {"/t/i.db": "d" * 32, "/e/f.db": "d" * 32}
    assert (sent.whole, sent.deltas, sent.pages) == ({}, [], [])
    parts = job_frame({"id": 3, "code": "", "function": "f", "kwargs": {}}, sent, {"keep": [], "forget": []})
    assert len(parts) == 1  # the JSON only: the worker holds the template
    a, b = socket.socketpair()
    try:
        _KEPT.clear()
        _KEPT["d" * 32] = template
        a.sendall(b"".join(parts))
        job = _read_job(b.fileno())
    finally:
        a.close()
        b.close()
        _KEPT.clear()
    assert job is not None and "broken" not in job
    assert job["templates"] == {"/t/i.db": "d" * 32, "/e/f.db": "d" * 32}
    assert job["dbs"] == {"/t/i.db": template, "/e/f.db": template}


def test_a_db_one_byte_from_its_template_still_goes_as_its_own_bytes(tmp_path: Path) -> None:
    template = db(tmp_path, "i.db", 40)
    final = bytearray(template)
    final[-1] ^= 1
    sent = plan({"/t/i.db": Kept("d" * 32, template), "/e/f.db": bytes(final)}, 32 << 20, Kept)
    assert sent.kept == {"/t/i.db": "d" * 32} and sent.deltas[0][0] == "/e/f.db"
    assert b"".join(sent.pages) == bytes(final[-(len(final) % PAGE or PAGE):])


@dataclass
class Rig:
    """A `KeptSockets` with one worker socket passed to it by SCM_RIGHTS; `worker` is the worker's end."""

    sockets: KeptSockets
    worker: socket.socket
    pending: dict[int, asyncio.Future[dict[str, Any]]]
    done: list[tuple[int, bool]] = field(default_factory=list)
    killed: list[tuple[int, str]] = field(default_factory=list)

    def job(self, job_id: int) -> asyncio.Future[dict[str, Any]]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[job_id] = future
        assert self.sockets.lease(job_id, {"wid": 1}, None)
        return future


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
    done: list[tuple[int, bool]] = []
    killed: list[tuple[int, str]] = []
    sockets = KeptSockets(pending, lambda i, c: done.append((i, c)), lambda w, why: killed.append((w, why)))
    worker, runtime = socket.socketpair()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    socket.send_fds(theirs, [b"1"], [runtime.fileno()])  # as the server sends a new worker's socket
    runtime.close()
    ours.setblocking(False)
    pending[1] = asyncio.get_running_loop().create_future()
    assert sockets.lease(1, {"wid": 1, "fd": True}, ours)
    assert not sockets.lease(2, {"wid": 9}, ours)  # no socket for a worker it was never sent
    yield Rig(sockets, worker, pending, done, killed)
    sockets.reset()
    for sock in (worker, ours, theirs):
        sock.close()


async def settle(future: asyncio.Future[Any] | None = None) -> None:
    for _ in range(100):
        await asyncio.sleep(0.005)
        if future is not None and future.done():
            return


async def test_a_result_answers_its_own_job_and_the_server_is_told(rig: Rig) -> None:
    rig.worker.sendall(result_frame({"ok": True, "value": 3}, {"id": 1}))
    await settle(rig.pending.get(1))
    assert rig.done == [(1, True)] and not rig.killed and not rig.pending
    second = rig.job(2)
    rig.worker.sendall(result_frame({"ok": False, "fault": "verifier", "error": "refused: x"}, {"id": 2}))
    assert await asyncio.wait_for(second, 5) == {"ok": False, "fault": "verifier", "error": "refused: x"}
    assert rig.done == [(1, True), (2, False)]  # a refusal: the server kills that worker


async def test_a_result_for_a_job_no_longer_awaited_is_dropped_and_the_worker_kept(rig: Rig) -> None:
    del rig.pending[1]  # cancelled while the worker ran: its result still comes, and is nobody's
    rig.worker.sendall(result_frame({"ok": True, "value": 1}, {"id": 1}))
    await settle()
    assert rig.done == [(1, True)] and not rig.killed
    second = rig.job(2)
    rig.worker.sendall(result_frame({"ok": True, "value": 2}, {"id": 2}))
    assert (await asyncio.wait_for(second, 5))["value"] == 2


@pytest.mark.parametrize(("data", "words"), [
    (HEADER.pack(MAX_RESULT + 1) + b"{", f"verifier result exceeded {MAX_RESULT >> 20} MiB"),
    (encode({"ok": True, "value": 1, "id": 1}) * 2, "verifier process wrote more than one result"),
    (encode({"ok": True, "value": 1, "id": 5}), "verifier process wrote a result for no job of its own"),
    (HEADER.pack(3) + b"{x]", "verifier process wrote an unreadable result"),
])
async def test_what_is_not_one_result_ends_the_workers_job_and_has_it_killed(rig: Rig, data: bytes,
                                                                              words: str) -> None:
    future = rig.pending[1]
    rig.worker.sendall(data)
    reply = await asyncio.wait_for(future, 5)
    assert reply["ok"] is False and reply["error"].startswith(words), reply
    assert rig.killed == [(1, reply["error"])]
    assert not rig.sockets.by_wid  # its socket is closed at once: nothing more is read from it


async def test_a_worker_that_ends_leaves_its_job_to_the_server_and_its_socket_is_closed(rig: Rig) -> None:
    sock = rig.sockets.by_wid[1].sock
    rig.worker.close()  # killed mid-job: the server says how (test_warm.py); here nothing answers the job
    await settle()
    assert not rig.sockets.by_wid and not rig.pending[1].done() and not rig.killed and not rig.done
    assert sock.fileno() == -1
