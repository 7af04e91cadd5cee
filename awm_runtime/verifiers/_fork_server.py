"""The verifier server: pre-imports the allowed modules once, then forks one child per verification.

Run by `Sandbox` as `python -I -m awm_runtime.verifiers._fork_server --parent PID` with a scrubbed
environment. It enters its namespaces once (no network, its own user namespace). Requests and
replies are frames on stdin/stdout. The server itself never runs verifier code: each job runs in
a fresh fork (a few ms, nothing to import) that confines itself (`isolation.confine`: it may read
the interpreter's files and exactly the job's DB files, write nothing, start no process, open no
socket) and then `_restrict`s the code, and reports on a private pipe. The server enforces the
wall-clock timeout and the size of the result, and turns every way a child can end into a
one-line error and who it is down to (`fault`: the verify call raised, the verifier's code, or the
sandbox; see `Sandbox.run`). A `cancel` request stops a job its caller no longer waits for.

Checking a verifier's source (`_restrict.check_source`, a walk of its syntax tree) took 1.7 ms of a
verification's ~6.7 ms, and a batch verifies the same task's code for every episode. So the first
child to compile a code sends the server its code object (marshalled) as a first frame, written
before any of the verifier's own code runs, and later children for the same code start from it.
The server never parses verifier source itself.

With `Sandbox(reuse=True)` a job given its DBs' bytes runs instead in a kept worker (`_warm`); the server forks and
supervises those workers (`lease`, `kill` and a dirty `done` on stdin; `run` and a clean `done` as notes on the
`--notes` pipe, read whenever the server wakes, before stdin, and every `NOTES_POLL_S` once it has forked a worker,
never waking it), but the job's bytes and result go straight between the runtime and the worker, on a socket it
passed the runtime once (`--fds`: the runtime's descriptor socket).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import marshal
import os
import selectors
import signal
import socket
import time
from collections import OrderedDict, deque
from types import CodeType
from typing import Any, NoReturn

from awm_runtime.isolation import (
    HEADER,
    MAX_FRAME,
    Confinement,
    Limits,
    confine,
    decode,
    die_with_parent,
    encode,
    enter_namespaces,
    protocol_fds,
    save_coverage,
    write_all,
    yield_cpu,
)
from awm_runtime.isolation import prepare as prepare_confinement
from awm_runtime.verifiers._outcome import MAX_RESULT, _Child, describe, outcome, reply_frame, result_frame
from awm_runtime.verifiers._outcome import child_reply as child_reply
from awm_runtime.verifiers._outcome import unencodable as unencodable
from awm_runtime.verifiers._restrict import compile_verifier, module_proxies, run_verifier
from awm_runtime.verifiers._warm import WarmPool, keep_heap, widen_pipe

CODE_MARK = b"C"  # a child's first frame holds its compiled code when it starts so; a result starts with "{"
CODE_CACHE = 512  # compiled verifiers the server keeps, the least recently used dropped first
NOTES_POLL_S = 0.1  # how often the server reads the notes pipe, once it has forked a kept worker


def _readable(paths: Any) -> tuple[str, ...]:
    """The job's DB files, and the journal files SQLite reads beside them when they exist."""
    out: list[str] = []
    for path in paths:
        out += [path, *(path + suffix for suffix in ("-journal", "-wal", "-shm") if os.path.exists(path + suffix))]
    return tuple(out)


def _child(job: dict[str, Any], out: int, proxies: dict[str, Any], parent: int, unsafe: bool) -> NoReturn:
    """In the fork: shed every fd but the result pipe, confine, run, report, exit."""
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.closerange(3, out)
        os.closerange(out + 1, 1 << 16)
        die_with_parent(parent)
        unreadable = [p for p in job.get("readable", ()) if not os.access(p, os.R_OK)]
        if unreadable:
            result: dict[str, Any] = {
                "ok": False, "fault": "sandbox",
                "error": f"the verifier sandbox (uid {os.getuid()}) cannot read {unreadable[0]}; keep world "
                         "files where other users can reach them (the default workdir does)"}
        else:
            limits = Limits(memory_mb=int(job["memory_mb"]), cpu_s=int(job["cpu_s"]), open_files=32, processes=0)
            try:
                confine(Confinement(limits, readable=_readable(job.get("readable", ()))), unsafe=unsafe)
            except Exception as exc:  # the boundary failed: never run the code unconfined
                result = {"ok": False, "fault": "sandbox", "error": f"cannot confine the verifier: {describe(exc)}"}
            else:
                result = outcome(lambda: run_verifier(job, proxies, _compiled(job, out)), job["memory_mb"])
    except BaseException as exc:  # before the verifier's code: shedding, the access check
        result = {"ok": False, "fault": "sandbox", "error": describe(exc)}
    # A whole frame lets the server reply as soon as it has arrived, without waiting for this process to end.
    data = result_frame(result)
    save_coverage()  # only in a measured test run: the server kills this process once its reply has arrived
    try:
        write_all(out, data)
    finally:
        os._exit(0)


def _compiled(job: dict[str, Any], out: int) -> CodeType:
    """The job's code object: the server's (`cached`, compiled by an earlier child from the same source), or
    checked and compiled here. Asked to (`share_code`), the child sends it to the server as its first frame,
    before any of the verifier's code has run: what the server keeps is never written by a verifier."""
    if job.get("cached") is not None:
        code: CodeType = marshal.loads(job["cached"])
        return code
    code = compile_verifier(job["code"])
    if job.get("share_code"):
        data = CODE_MARK + marshal.dumps(code)
        write_all(out, HEADER.pack(len(data)) + data)
    return code


class Server:
    def __init__(self, in_fd: int, out_fd: int, *, max_children: int, parent: int, unsafe: bool = False,
                 fds: socket.socket | None = None, notes_fd: int | None = None) -> None:
        self.in_fd, self.out_fd, self.parent, self.unsafe = in_fd, out_fd, parent, unsafe
        self.notes_fd = notes_fd  # the runtime's notes (`run`, clean `done`): read on waking, never waking it
        self.notesbuf = bytearray()
        self.max_children = max_children
        self.proxies = module_proxies()
        self.sel = selectors.DefaultSelector()
        self.sel.register(in_fd, selectors.EVENT_READ)
        self.inbuf = bytearray()
        self.jobs: deque[dict[str, Any]] = deque()
        self.children: dict[int, _Child] = {}
        self.exiting: dict[int, int] = {}  # pidfd -> pid of a child killed after its reply, not yet reaped
        self.compiled: OrderedDict[str, bytes] = OrderedDict()  # verifier source -> its marshalled code
        self.warm = WarmPool(self.sel, self.proxies, parent, unsafe, self._reap_later,
                             lambda data: write_all(self.out_fd, data), fds)

    def _read_requests(self) -> bool:
        data = os.read(self.in_fd, 1 << 20)
        if not data:
            return False
        self.inbuf += data
        return self._requests(self.inbuf)

    def _read_notes(self) -> None:
        """Take what the runtime noted on the notes pipe since the last look (`run`, a clean `done`): before
        anything else the server does on waking, so that every request on stdin, a worker's end and a deadline
        are seen after the notes the runtime wrote before them."""
        if self.notes_fd is None:
            return
        while True:
            try:
                data = os.read(self.notes_fd, 1 << 20)
            except BlockingIOError:
                break
            if not data:  # the runtime is gone (this server dies with it)
                self._close_notes()
                break
            self.notesbuf += data
            self._requests(self.notesbuf)

    def _close_notes(self) -> None:
        """The runtime closed the notes pipe: nothing more comes on it."""
        assert self.notes_fd is not None
        os.close(self.notes_fd)
        self.notes_fd = None

    def _requests(self, buf: bytearray) -> bool:
        """Handle the whole frames in `buf` (dropped from it); False on a frame too large to be one."""
        while len(buf) >= HEADER.size:
            (size,) = HEADER.unpack_from(buf)
            if size > MAX_FRAME:
                return False
            if len(buf) < HEADER.size + size:
                break
            with memoryview(buf) as view:
                job: dict[str, Any] = decode(view[HEADER.size:HEADER.size + size])
            del buf[:HEADER.size + size]
            op = job.get("op")
            if op == "cancel":
                self._cancel(int(job["id"]))
            elif op == "run":
                if not self.warm.run(job):  # its worker ended while idle: a new one, as a lease
                    self.jobs.append({**job, "lease": True})
            elif op == "done":
                self.warm.done(int(job["id"]), bool(job["clean"]))
            elif op == "kill":
                self.warm.kill(int(job["wid"]), str(job["why"]))
            else:
                self.jobs.append(job)
        return True

    def _cancel(self, job_id: int) -> None:
        """The caller stopped waiting: drop the job if queued, kill it if running (its reply is discarded)."""
        self.jobs = deque(j for j in self.jobs if int(j["id"]) != job_id)
        for fd, child in list(self.children.items()):
            if child.job_id == job_id:
                self._kill(fd, "verifier cancelled")
        self.warm.cancel(job_id)

    def _spawn(self, job: dict[str, Any]) -> None:
        source: str | None = job["code"] if isinstance(job.get("code"), str) else None
        cached = self.compiled.get(source) if source is not None else None
        if source is not None and cached is not None:
            self.compiled.move_to_end(source)
        job = {**job, "cached": cached, "share_code": source is not None and cached is None}
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _child(job, write_end, self.proxies, os.getppid(), self.unsafe)
        os.close(write_end)
        os.set_blocking(read_end, False)
        now = time.monotonic()
        timeout = float(job["timeout_s"])
        self.children[read_end] = _Child(pid, int(job["id"]), now + timeout, now, timeout, int(job["cpu_s"]),
                                         code=source if job["share_code"] else None)
        self.sel.register(read_end, selectors.EVENT_READ)

    def _finish(self, fd: int, *, whole: bool = False) -> None:
        """Reply for the child on `fd`. `whole`: its result frame has arrived; it is killed and reaped later,
        so the reply does not wait for its exit. Otherwise (EOF, a kill) it is reaped now, for its status."""
        child = self.children.pop(fd)
        self.sel.unregister(fd)
        os.close(fd)
        # Whatever the child does after its result (or after closing the pipe itself) is cut short.
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGKILL)
        if whole:
            (size,) = HEADER.unpack_from(child.buf)
            child.buf = child.buf[HEADER.size:HEADER.size + size]
            status = 0
            self._reap_later(child.pid)
        else:
            del child.buf[:HEADER.size]
            _, status = os.waitpid(child.pid, 0)
        elapsed_ms = (time.monotonic() - child.started) * 1000
        write_all(self.out_fd, reply_frame(child, status, elapsed_ms))

    def _reap_later(self, pid: int) -> None:
        """Reap a killed child when it has exited (its pidfd becomes readable), off the reply's path. Only this
        server reaps its children, so the pid is there to open, as a zombie at worst."""
        pidfd = os.pidfd_open(pid)
        self.exiting[pidfd] = pid
        self.sel.register(pidfd, selectors.EVENT_READ)

    def _reap(self, pidfd: int) -> None:
        pid = self.exiting.pop(pidfd)
        self.sel.unregister(pidfd)
        os.close(pidfd)
        os.waitpid(pid, 0)

    def _kill(self, fd: int, why: str) -> None:
        self.children[fd].killed = why
        self._finish(fd)

    def _on_child_output(self, fd: int) -> None:
        child = self.children[fd]
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if not data:
            self._finish(fd)
            return
        child.buf += data
        while True:
            size = HEADER.unpack_from(child.buf)[0] if len(child.buf) >= HEADER.size else 0
            if size > MAX_RESULT or len(child.buf) > HEADER.size + MAX_RESULT:
                self._kill(fd, f"verifier result exceeded {MAX_RESULT >> 20} MiB")
            elif len(child.buf) >= HEADER.size + size > HEADER.size:
                if child.code is not None and child.buf[HEADER.size:HEADER.size + 1] == CODE_MARK:
                    self._keep_code(child.code, bytes(child.buf[HEADER.size + 1:HEADER.size + size]))
                    child.code = None  # only the first frame: later ones are written after the verifier ran
                    del child.buf[:HEADER.size + size]
                    continue
                self._finish(fd, whole=True)
            return

    def _keep_code(self, source: str, data: bytes) -> None:
        self.compiled[source] = data
        self.compiled.move_to_end(source)
        while len(self.compiled) > CODE_CACHE:
            self.compiled.popitem(last=False)

    def serve(self) -> None:
        while True:
            now = time.monotonic()
            for fd, child in list(self.children.items()):
                if child.deadline <= now:
                    self._kill(fd, f"verifier timed out after {child.timeout_s:g}s")
            while self.jobs and len(self.children) + len(self.warm.busy) < self.max_children:
                job = self.jobs.popleft()
                if job.get("lease"):
                    self.warm.start(job)
                else:
                    self._spawn(job)
            warm = self.warm.check(time.monotonic())
            deadlines = [c.deadline for c in self.children.values()] + ([] if warm is None else [warm])
            if self.notes_fd is not None and self.warm.forked:  # a kept worker's job may start unannounced
                deadlines.append(time.monotonic() + NOTES_POLL_S)
            wait = min(deadlines, default=None)
            events = self.sel.select(None if wait is None else max(0.0, wait - time.monotonic()))
            self._read_notes()
            for key, _ in events:
                if key.fd == self.in_fd:
                    if not self._read_requests():
                        return
                elif key.fd in self.children:
                    self._on_child_output(key.fd)
                elif key.fd in self.exiting:
                    self._reap(key.fd)
                elif self.warm.owns(key.fd):
                    self.warm.on_ready(key.fd)

    def stop(self) -> None:
        for fd in list(self.children):
            self._kill(fd, "verifier server stopped")
        self.warm.stop()
        for pidfd in list(self.exiting):
            self._reap(pidfd)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--max-children", type=int, default=4)
    parser.add_argument("--unsafe", action="store_true")
    parser.add_argument("--fds", type=int, default=-1, help="a socket to pass kept workers' sockets to the runtime")
    parser.add_argument("--notes", type=int, default=-1, help="a pipe the runtime notes kept workers' jobs on")
    args = parser.parse_args()
    die_with_parent(args.parent)
    yield_cpu()  # verifications run below the runtime's loop, which serves every episode
    if not args.unsafe:
        enter_namespaces()  # once, single-threaded: every job inherits no network and its own user namespace
        prepare_confinement()
    in_fd, out_fd = protocol_fds()
    widen_pipe(in_fd)
    keep_heap()  # kept workers inherit it: a job's DB bytes land in pages already mapped
    import _strptime  # noqa: F401  datetime.strptime imports it lazily; the child may not be able to

    fds = socket.socket(fileno=args.fds) if args.fds >= 0 else None
    notes = args.notes if args.notes >= 0 else None
    if notes is not None:
        os.set_blocking(notes, False)
    server = Server(in_fd, out_fd, max_children=args.max_children, parent=args.parent, unsafe=args.unsafe, fds=fds,
                    notes_fd=notes)
    # Without this a child's first full collection walks every inherited object, copying each page
    # it touches: ~25 ms of a verification's ~30 ms. Frozen objects are outside the collector's reach.
    gc.collect()
    gc.freeze()
    write_all(out_fd, encode({"ok": True, "ready": True, "pid": os.getpid()}))
    try:
        server.serve()
    finally:
        server.stop()
        os._exit(0)


if __name__ == "__main__":
    main()
