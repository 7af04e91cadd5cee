"""A kept verifier worker: one confined process that runs many verifications of one verifier's code.

Forked by the verifier server (`_warm`) for a verifier code it has no idle worker for. Before it reads
its first job it sheds every descriptor but its end of the socket the runtime holds the other end of, and
confines itself for good
(`isolation.confine`: no file of any episode readable, nothing writable, no process, no socket, its
memory limit). It never opens an episode's DB: each job brings the bytes of its DBs (read by the
runtime), and `sqlite3.connect(path)` in the verifier opens a private in-memory copy of the bytes
named by `path`, read-only (`PRAGMA query_only`, which the verifier may not turn off), with ATTACH
refused. Any other path opens nothing. Each job gets a fresh module namespace and fresh builtins,
and its DB bytes are dropped when it ends.

Templates (a scenario's pristine initial DB) are kept between jobs, by digest, as the runtime says (`keep`: their
bytes come first in the job's frame; `forget`): immutable `bytes`, which no verifier can reach. A job's connection
to its template opens the worker's one shared in-memory copy of it (SQLite's shared cache, `_shared`: made from the
bytes on first use, its schema parsed once, where a private copy parsed it again for every connection: ~25 instead
of ~170 us a connection, a third of a verification), read-only like any job DB. Were a write ever let through,
SQLite's `data_version` of the copy moves: the worker checks it after each job that used it and drops a moved copy
(the next one is made again from the bytes), so no later job sees it. A worker serves one verifier code, so such a
copy is only ever shared between runs of that code. A final DB the runtime names by a template's digest (the
very bytes of the template: an episode that changed nothing) opens that copy too. A final DB sent as the pages where
it differs from a template is written into that template's store (`_scratch`: one a template, each job's DB written
over the last one's, its connections sharing one parsed schema, ~30 instead of ~165 us). Any other DB opens a private
copy (`deserialize`).

Jobs come from the runtime on the socket (`_direct.job_frame`), one at a time, each leased to this worker by the
server; each result goes back on the same socket as a JSON frame (`_outcome.result_frame`) with the job's id. It
writes nothing to the server: the runtime tells the server when a job is over and whether this worker is kept.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
from itertools import count
from types import CodeType
from typing import Any, NoReturn
from urllib.parse import unquote, urlsplit

import orjson

from awm_runtime.isolation import (
    HEADER,
    Confinement,
    Limits,
    confine,
    die_with_parent,
    read_exact,
    save_coverage,
    write_all,
)
from awm_runtime.verifiers._delta import patched
from awm_runtime.verifiers._outcome import describe, outcome, result_frame
from awm_runtime.verifiers._restrict import ReadOnlyConnection, compile_verifier, restricted_builtins, run_verifier
from awm_runtime.verifiers._scratch import Scratch

_DBS: dict[str, Any] = {}  # the running job's DB bytes, by the path the verifier is given
_KEPT: dict[str, bytes] = {}  # templates' bytes by digest, kept between jobs (the runtime decides which)
_TEMPLATE_OF: dict[str, str] = {}  # the running job's template DBs: path -> digest (opened shared, `_shared`)
_SHARED: dict[str, tuple[sqlite3.Connection, str, int]] = {}  # digest -> its shared copy: holder, URI, data_version
_SCRATCH: dict[str, Scratch | None] = {}  # template digest -> the store its final DBs are written into (None: none)
_FINAL_OF: dict[str, str] = {}  # the running job's final DBs in a store: path -> template digest
_NAMES = count(1)


def _shared(digest: str) -> str:
    """The URI of template `digest`'s shared in-memory copy, made from its kept bytes on first use (its schema read
    once, by the connection that holds it open)."""
    held = _SHARED.get(digest)
    if held is None:
        uri = f"file:awm-template-{next(_NAMES)}?mode=memory&cache=shared"
        holder = sqlite3.Connection(uri, uri=True)
        try:
            source = sqlite3.Connection(":memory:")
            try:
                source.deserialize(_KEPT[digest])
                source.backup(holder)
            finally:
                source.close()
            version = holder.execute("PRAGMA data_version").fetchone()[0]  # reads the schema, once
        except BaseException:
            holder.close()
            raise
        held = _SHARED[digest] = (holder, uri, version)
    return held[1]


def _drop_shared(digest: str) -> None:
    held = _SHARED.pop(digest, None)
    if held is not None:
        held[0].close()
    scratch = _SCRATCH.pop(digest, None)
    if scratch is not None:
        scratch.close()


def _store_of(digest: str) -> Scratch | None:
    """Template `digest`'s store for final DBs (`_scratch`), made on first use, or again when a statement of an
    ended job still reads the one there (`busy`: it is never written again); None if none can be made."""
    held = _SCRATCH.get(digest)
    if held is not None and held.busy():
        held.close()
        del _SCRATCH[digest]
    if digest not in _SCRATCH:
        try:
            _SCRATCH[digest] = Scratch(_KEPT[digest])
        except (sqlite3.Error, MemoryError, OSError, ValueError):
            _SCRATCH[digest] = None
    return _SCRATCH[digest]


def check_shared(digests: Any, finals: Any = ()) -> None:
    """Drop the shared copies of `digests` (the templates a job used) that a connection has written to; close the
    job's connections to the stores of `finals` (the templates whose store held a final DB of the job: each job
    writes its whole DB there, so a write let through reaches no later job, `_scratch`)."""
    for digest in finals:
        scratch = _SCRATCH.get(digest)
        if scratch is not None:
            scratch.end_job()
    for digest in digests:
        held = _SHARED.get(digest)
        try:
            moved = held is not None and held[0].execute("PRAGMA data_version").fetchone()[0] != held[2]
        except sqlite3.Error:  # a copy that cannot say is dropped too
            moved = True
        if moved:
            _drop_shared(digest)


def _deny(action: int, arg1: Any, *_args: Any) -> int:
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and str(arg1).lower() == "query_only":
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class BytesConnection(ReadOnlyConnection):
    """`sqlite3.connect` in a kept worker: a job's DB path opens, read-only, the worker's shared copy of it if it
    is a template (`_shared`), its template's store if it is a final DB written there (`_scratch`), else a private
    in-memory copy of its bytes; `:memory:` stays private and writable; any other file opens nothing."""

    def __init__(self, database: Any, timeout: float = 5.0, detect_types: int = 0, isolation_level: Any = "",
                 check_same_thread: bool = True, factory: Any = None, cached_statements: int = 128,
                 uri: bool = False, **_ignored: Any) -> None:
        target = os.fsdecode(database)
        if uri and target.startswith("file:") and not target.startswith("file::memory:"):
            target = unquote(urlsplit(target).path)
        data = _DBS.get(target)
        if data is None and target not in ("", ":memory:") and not target.startswith("file::memory:"):
            raise sqlite3.OperationalError("unable to open database file")
        digest = _TEMPLATE_OF.get(target) if data is not None else None
        shared = None
        if isinstance(data, Scratch):  # a final DB written into its template's store (`_scratch`)
            shared = data.uri
        elif digest is not None:
            with contextlib.suppress(sqlite3.Error, MemoryError):  # no shared copy: a private one, as for any DB
                shared = _shared(digest)
        # ReadOnlyConnection's settings, made once each here (its own __init__ sets an authorizer this one replaces:
        # a connection a verification opens costs ~40 us more than a bare one that way, twice a verification).
        sqlite3.Connection.__init__(self, shared or ":memory:", timeout, detect_types, isolation_level,
                                    check_same_thread, sqlite3.Connection, cached_statements, shared is not None)
        sqlite3.Connection.setlimit(self, sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        if isinstance(data, Scratch):
            data.opened(self)
        elif data is not None and shared is None:
            sqlite3.Connection.deserialize(self, data)
        if data is not None:
            sqlite3.Connection.execute(self, "PRAGMA query_only = 1")
        sqlite3.Connection.set_authorizer(self, _deny)


def connect_bytes(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
    """What `sqlite3.connect` is in a kept worker."""
    kwargs.pop("factory", None)
    return BytesConnection(database, *args, **kwargs)


def _read_job(fd: int) -> dict[str, Any] | None:
    """The next job from the server, its DBs as views of the one buffer it came in; None at EOF."""
    head = read_exact(fd, HEADER.size)
    if head is None:
        return None
    (size,) = HEADER.unpack(head)
    buf = bytearray(size)
    view, got = memoryview(buf), 0
    while got < size:
        n = os.readv(fd, [view[got:]])
        if not n:
            return None
        got += n
    (json_size,) = HEADER.unpack_from(buf, 1)  # the runtime's frame: MARK, the JSON's size, the JSON, the DBs
    at = 1 + HEADER.size + json_size
    job: dict[str, Any] = orjson.loads(view[1 + HEADER.size:at])
    for digest in job.pop("forget", ()):
        _KEPT.pop(str(digest), None)
        _drop_shared(str(digest))
    for digest, length in job.pop("keep", ()):
        _KEPT[str(digest)] = bytes(view[at:at + int(length)])  # its own immutable copy: the buffer is the job's
        at += int(length)
    dbs: dict[str, Any] = {}
    templates: dict[str, str] = {}
    for path, length in zip(job.pop("blob_paths"), job.pop("blob_sizes"), strict=True):
        dbs[str(path)] = view[at:at + int(length)]
        at += int(length)
    for path, digest in job.pop("kept", {}).items():
        if str(digest) not in _KEPT:  # the server mirrors what this worker holds: a bug, never a wrong DB
            job["broken"] = f"the kept verifier worker does not hold template {digest}"
        else:
            dbs[str(path)] = _KEPT[str(digest)]
            templates[str(path)] = str(digest)
    finals: dict[str, str] = {}
    for path, digest, length, pages in job.pop("deltas", ()):  # DBs sent as their pages unlike a template's
        base = _KEPT.get(str(digest))
        if base is None:
            job["broken"] = f"the kept verifier worker does not hold template {digest}"
            continue
        pages = [int(p) for p in pages]
        # Into the template's store (one DB a job: a second one of the same template opens a private copy).
        scratch = _store_of(str(digest)) if str(digest) not in finals.values() else None
        end = scratch.load(base, int(length), pages, view, at) if scratch is not None else None
        if scratch is not None and end is not None:
            dbs[str(path)], finals[str(path)], at = scratch, str(digest), end
            continue
        try:
            dbs[str(path)], at = patched(base, int(length), pages, view, at)
        except ValueError as exc:
            job["broken"] = f"the kept verifier worker was sent a broken DB: {exc}"
    job["dbs"], job["templates"], job["finals"] = dbs, templates, finals
    return job


def serve(sock: int, proxies: dict[str, Any], parent: int, unsafe: bool, memory_mb: int, cpu_s: int) -> NoReturn:
    """In the fork: confine once, then run each job the runtime sends on `sock`, until it closes."""
    reason = ""
    try:
        keep = {sock}
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        low = 3
        for fd in sorted(keep):
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, 1 << 16)
        die_with_parent(parent)
        confine(Confinement(Limits(memory_mb=memory_mb, cpu_s=cpu_s, open_files=32, processes=0)), unsafe=unsafe)
    except BaseException as exc:  # the boundary failed: never run the code unconfined
        reason = f"cannot confine the verifier: {describe(exc)}"
    proxies["sqlite3"].connect = connect_bytes
    proxies["sqlite3"].Connection = BytesConnection
    compiled: CodeType | None = None
    base = restricted_builtins(proxies)  # each job runs with a fresh copy of it
    gc.collect()
    gc.freeze()
    while True:
        job = _read_job(sock)
        if job is None:
            break
        tail = {"id": job.get("id")}
        if reason or job.get("broken"):  # not a clean result: the runtime has the server kill this worker
            if not _answer(sock, result_frame({"ok": False, "fault": "sandbox", "error": reason or job["broken"]},
                                              tail)):
                break
            continue
        _DBS.clear()
        _DBS.update(job.pop("dbs"))
        _TEMPLATE_OF.clear()
        _TEMPLATE_OF.update(job.pop("templates"))
        _FINAL_OF.clear()
        _FINAL_OF.update(job.pop("finals"))

        def run(job: dict[str, Any] = job) -> Any:
            nonlocal compiled
            if compiled is None:
                compiled = compile_verifier(job["code"])
            return run_verifier(job, proxies, compiled, base)

        result = outcome(run, memory_mb)
        _DBS.clear()
        check_shared(_TEMPLATE_OF.values(), _FINAL_OF.values())
        _TEMPLATE_OF.clear()
        _FINAL_OF.clear()
        data = result_frame(result, tail)
        del result, job
        save_coverage()
        if not _answer(sock, data):
            break
    os._exit(0)


def _answer(sock: int, data: bytes) -> bool:
    """Write a job's result frame to the runtime; False when it is gone."""
    try:
        write_all(sock, data)
    except OSError:
        return False
    return True


__all__ = ["BytesConnection", "connect_bytes", "serve"]
