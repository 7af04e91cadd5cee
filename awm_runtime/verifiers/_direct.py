"""The runtime's end of kept verifier workers (`Sandbox(reuse=True)`): jobs and results go straight between the
runtime and the worker, the verifier server only supervising (`_warm`).

Per job the runtime plans what it sends (`plan`: templates by digest, a final DB as its changed pages), takes an
idle worker of the job's code it holds (`KeptSockets.take`, noting `run` for the server) or asks the server for a new
one (`lease`), and writes the job (`job_frame`, with the templates that worker lacks: `mirror`) to that worker's
socket. The server passes a new worker's socket once, with its first lease (SCM_RIGHTS on the descriptor socket);
`KeptSockets` keeps it, watched by the event loop, until it reads EOF there (the worker ended: killed, retired or
crashed), and only then closes it, so a result written before the worker ended is still read.

A result names its job (`id`), and is taken only for a job leased to the worker whose socket it came on: a reply
never reaches another worker's job. A result for a job no longer awaited (cancelled, or already ended by the
server) is dropped; its worker stays if the server keeps it. What is not one result within `MAX_RESULT` bytes
(a larger one, a second frame, bytes from an idle worker, something unreadable) ends the jobs leased to that
worker with the words the server used for it, and has the server kill the worker (`kill`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import socket
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from awm_runtime.isolation import HEADER, encode
from awm_runtime.verifiers._delta import PAGE, changed_pages, page_bytes
from awm_runtime.verifiers._outcome import MAX_RESULT, clean, read_result
from awm_runtime.verifiers._warm import MAX_IDLE, MAX_JOBS

BLOBS_MARK = b"B"  # a job frame: MARK, its JSON's size, the JSON, then the DBs' bytes (`_warm_worker._read_job`)
MAX_PARTS = 256  # changed pages sent as parts of one write; more are joined first


@functools.lru_cache(maxsize=1024)
def code_digest(code: str) -> str:
    """The name the server keeps a verifier's workers under (it never sees, nor needs, the source); the last
    1,024 codes' kept (a batch verifies the same few codes again and again)."""
    return hashlib.blake2b(code.encode(), digest_size=16).hexdigest()


@dataclass(slots=True)
class Plan:
    """What a job sends besides its JSON: the templates it names (`kept`: path -> digest, their bytes by digest in
    `templates`), the DBs that go whole, and the others as the pages where they differ from a template."""

    kept: dict[str, str] = field(default_factory=dict)
    templates: dict[str, Any] = field(default_factory=dict)
    whole: dict[str, Any] = field(default_factory=dict)
    deltas: list[list[Any]] = field(default_factory=list)
    pages: list[Any] = field(default_factory=list)


def plan(data: dict[str, Any], kept_bytes: int, kept_type: type) -> Plan:
    """How `data` (path -> bytes, or a `kept_type` template with `digest` and `data`) travels: each template within
    `kept_bytes` by its digest; another DB that is the very bytes of a template beside it by that template's digest
    too (the worker opens it as its shared read-only copy of the template: no copy, no schema parsed again); another
    DB larger than a page, beside a template, as its pages that differ from it (`_delta`), unless more than half of
    them do; everything else whole."""
    out = Plan()
    base: Any = None
    for path, value in data.items():
        if not isinstance(value, kept_type) or len(value.data) > kept_bytes:  # type: ignore[attr-defined]
            out.whole[path] = value.data if isinstance(value, kept_type) else value  # type: ignore[attr-defined]
            continue
        out.kept[path], base = value.digest, value  # type: ignore[attr-defined]
        out.templates[value.digest] = value.data  # type: ignore[attr-defined]
    for path in [p for p, v in out.whole.items() if base is not None and len(v) == len(base.data)]:
        if out.whole[path] == base.data:  # an episode that changed nothing: its DB opens as the template
            del out.whole[path]
            out.kept[path] = base.digest
    for path in [p for p, v in out.whole.items() if base is not None and len(v) > PAGE]:
        changed = changed_pages(base.data, out.whole[path])
        if 2 * len(changed) * PAGE < len(out.whole[path]):  # else it goes whole
            final = out.whole.pop(path)
            out.deltas.append([path, base.digest, len(final), changed])
            out.pages += page_bytes(final, changed)
    return out


def job_frame(job: dict[str, Any], sent: Plan, lease: dict[str, Any]) -> list[Any]:
    """The job's frame for its worker, in parts: the templates it lacks (`keep`), then the whole DBs, then the
    changed pages (the order `_warm_worker._read_job` reads them in)."""
    keep = [[d, len(sent.templates[d])] for d in lease.get("keep", ())]
    body = encode({**job, "kept": sent.kept, "deltas": sent.deltas, "keep": keep, "forget": lease.get("forget", []),
                   "blob_paths": list(sent.whole), "blob_sizes": [len(v) for v in sent.whole.values()]})
    pages = sent.pages if len(sent.pages) <= MAX_PARTS else [b"".join(sent.pages)]  # a write takes 1,024 parts at most
    blobs = [*(sent.templates[d] for d, _ in keep), *sent.whole.values(), *pages]
    head = BLOBS_MARK + body  # `encode`'s header is the JSON's size, as the worker reads it after the mark
    size = len(head) + sum(len(b) for b in blobs)
    return [HEADER.pack(size) + head, *blobs]


@dataclass(slots=True)
class _Kept:
    """The runtime's end of one kept worker's socket, the jobs given it that it has not answered, the templates it
    holds (`kept`: digest -> size, least recently used first) and how many jobs it has served."""

    wid: int
    sock: socket.socket
    code: str = ""
    buf: bytearray = field(default_factory=bytearray)
    jobs: set[int] = field(default_factory=set)
    kept: OrderedDict[str, int] = field(default_factory=OrderedDict)
    served: int = 0


def mirror(kept: _Kept, sizes: dict[str, int], kept_max: int) -> tuple[list[str], list[str], int]:
    """What a worker must be sent for a job needing the templates `sizes` (digest -> size; those it does not hold),
    what it must let go (least recently used first, until it holds at most `kept_max` bytes, never one this job
    needs), and how many it holds already; `kept.kept` becomes what it will hold."""
    keep: list[str] = []
    for digest, size in sizes.items():
        if digest in kept.kept:
            kept.kept.move_to_end(digest)
        else:
            keep.append(digest)
            kept.kept[digest] = size
    forget: list[str] = []
    held = sum(kept.kept.values())
    for digest in list(kept.kept):
        if held <= kept_max:
            break
        if digest not in sizes:
            held -= kept.kept.pop(digest)
            forget.append(digest)
    return keep, forget, len(sizes) - len(keep)


class KeptSockets:
    """The kept workers' sockets the runtime holds, by the server's worker id; results resolve `pending` by job id.
    `done(id, clean)` tells the server a job's result was read; `kill(wid, why)` asks it to kill a worker."""

    def __init__(self, pending: dict[int, asyncio.Future[dict[str, Any]]], done: Callable[[int, bool], None],
                 kill: Callable[[int, str], None]) -> None:
        self.pending, self.done, self.kill = pending, done, kill
        self.by_wid: dict[int, _Kept] = {}
        self.idle: OrderedDict[int, _Kept] = OrderedDict()  # workers this process holds idle, least recent first

    def take(self, code: str) -> _Kept | None:
        """An idle worker of `code` (the most recently used), now this job's: None if there is none."""
        for kept in reversed(self.idle.values()):
            if kept.code == code:
                del self.idle[kept.wid]
                return kept
        return None

    def lease(self, job_id: int, lease: dict[str, Any], fds: socket.socket | None, code: str = "") -> _Kept | None:
        """Take a lease the server granted: a new worker's socket comes with it (`fd`). None when the runtime has
        no socket for the worker: the job is then the server's to end."""
        wid = int(lease["wid"])
        if lease.get("fd"):
            got = _receive_fd(fds, wid)
            if got is None:
                return None
            self._watch(wid, got, code)
        kept = self.by_wid.get(wid)
        if kept is not None:
            kept.jobs.add(job_id)
        return kept

    def _watch(self, wid: int, sock: socket.socket, code: str) -> None:
        sock.setblocking(False)
        old = self.by_wid.pop(wid, None)
        if old is not None:  # a server's ids are unique: only a stale socket of a previous server
            self._drop(old)
        kept = self.by_wid[wid] = _Kept(wid, sock, code)
        asyncio.get_running_loop().add_reader(sock.fileno(), self._readable, kept)

    async def send(self, kept: _Kept, job: dict[str, Any], sent: Plan, kept_max: int) -> tuple[int, int]:
        """Write `job` to its worker, with the templates it lacks (and what to let go, `mirror`); the templates it
        held already and those sent. A worker already gone is no error here: the server ends its job; a frame that
        cannot be written is the job's end (the server kills the worker with the reason)."""
        keep, forget, hits = mirror(kept, {d: len(v) for d, v in sent.templates.items()}, kept_max)
        parts = job_frame(job, sent, {"keep": keep, "forget": forget})
        await self._write(kept, parts)
        return hits, len(keep)

    async def _write(self, kept: _Kept, parts: list[Any]) -> None:
        wid = kept.wid
        try:
            sent = kept.sock.sendmsg(parts)
            if sent < sum(len(p) for p in parts):  # a first job with its templates may not fit at once
                await asyncio.get_running_loop().sock_sendall(kept.sock, b"".join(parts)[sent:])
        except (BrokenPipeError, ConnectionResetError):
            pass
        except OSError as exc:
            self.kill(wid, f"the verifier job could not be sent ({type(exc).__name__}: {exc})")

    def _readable(self, kept: _Kept) -> None:
        try:
            data = kept.sock.recv(1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the worker ended; a job it did not answer gets the server's words
            self._drop(kept)
            return
        kept.buf += data
        while len(kept.buf) >= HEADER.size:
            (size,) = HEADER.unpack_from(kept.buf)
            if size > MAX_RESULT:
                self._broken(kept, f"verifier result exceeded {MAX_RESULT >> 20} MiB")
                return
            if len(kept.buf) < HEADER.size + size:
                return
            with memoryview(kept.buf) as view:
                reply = read_result(view[HEADER.size:HEADER.size + size])
            del kept.buf[:HEADER.size + size]
            job_id = reply.pop("id", None)
            if job_id not in kept.jobs:  # unreadable, or not for a job of this worker's
                unreadable = job_id is None and set(reply) == {"ok", "error"} and not reply["ok"]
                self._broken(kept, str(reply["error"]) if unreadable else "verifier process wrote a result for no job "
                             "of its own")
                return
            kept.jobs.discard(job_id)
            kept.served += 1
            keep = clean(reply) and not kept.buf and kept.served < MAX_JOBS
            if kept.buf:
                self.done(job_id, False)
                self._broken(kept, "verifier process wrote more than one result", also=(job_id, reply))
                return
            future = self.pending.pop(job_id, None)
            if future is not None and not future.done():
                future.set_result(reply)
            # After the result (its awaiter runs first, and its next `run` or `lease` carries this in the same
            # write), before anything else this process sends the server.
            self.done(job_id, keep)
            if keep and not kept.jobs and self.by_wid.get(kept.wid) is kept:
                self.idle[kept.wid] = kept
                while len(self.idle) > MAX_IDLE:
                    _, old = self.idle.popitem(last=False)
                    self.kill(old.wid, "closed idle")

    def _broken(self, kept: _Kept, why: str, also: tuple[int, dict[str, Any]] | None = None) -> None:
        """Not one result: the jobs leased to the worker end with `why`, and the server kills it."""
        ended = [*kept.jobs, *([also[0]] if also else [])]
        for job_id in ended:
            future = self.pending.pop(job_id, None)
            if future is not None and not future.done():
                future.set_result({"ok": False, "error": why})
        self._drop(kept)
        self.kill(kept.wid, why)

    def _drop(self, kept: _Kept) -> None:
        if self.by_wid.get(kept.wid) is kept:
            del self.by_wid[kept.wid]
        if self.idle.get(kept.wid) is kept:
            del self.idle[kept.wid]
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(kept.sock.fileno())
        kept.sock.close()

    def reset(self) -> None:
        """Close every socket (their server has ended, and its workers with it)."""
        for kept in list(self.by_wid.values()):
            if kept.sock.fileno() >= 0:
                with contextlib.suppress(Exception):
                    asyncio.get_running_loop().remove_reader(kept.sock.fileno())
            kept.sock.close()
        self.by_wid.clear()
        self.idle.clear()


def _receive_fd(fds: socket.socket | None, wid: int) -> socket.socket | None:
    """The socket the server sent for worker `wid`, already queued (it sends it before the lease)."""
    if fds is None:
        return None
    try:
        msg, got, _, _ = socket.recv_fds(fds, 32, 1, socket.MSG_CMSG_CLOEXEC)
    except (BlockingIOError, OSError):
        return None
    if msg != b"%d" % wid or len(got) != 1:
        for fd in got:
            socket.close(fd)
        return None
    return socket.socket(fileno=got[0])


__all__ = ["BLOBS_MARK", "KeptSockets", "Plan", "code_digest", "job_frame", "plan"]
