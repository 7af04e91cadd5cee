"""The runtime's side of the verifier sandbox: one long-lived server process, many verifications.

`Sandbox.run` sends a job and awaits its reply; replies are matched by id, so verifications
run in parallel (up to the server's child limit). If the server dies, the verifications in
flight fail with a clear error and the next one starts a new server.

Two ways a job runs there (docs/worlds.md, "Verifier isolation"): by default each in a fresh fork that
confines itself to read exactly its two DB files; with `reuse=True`, a job given its DBs' bytes (`data`)
runs in a kept, confined worker for its verifier's code (`_warm`), which reads no file at all. The server
leases such a worker to the job; the job's bytes and its result go straight between this process and the
worker, on a socket the server passed once per worker (`_direct`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import select
import socket
import sys
import time
from dataclasses import dataclass
from typing import Any, Literal

from awm_runtime.isolation import (
    FrameError,
    encode,
    kill_process,
    mark_private,
    module_code,
    read_frame,
    scrubbed_env,
    stop_process,
)
from awm_runtime.verifiers._delta import numpy
from awm_runtime.verifiers._direct import KeptSockets, code_digest, plan
from awm_runtime.verifiers._warm import widen_pipe

START_TIMEOUT_S = 60.0
KEPT_BYTES = 32 << 20  # templates' bytes the server keeps, and each kept worker keeps (least recently used dropped)
GRACE_S = 10.0  # the server enforces the timeout; the runtime waits this much longer before giving up on it


Fault = Literal["raised", "verifier", "sandbox"]


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """What a verification returned, or why it did not. `fault` says who a failure is down to:
    `raised` - the verify function raised at run time (on the DB it was given); `verifier` - its code
    does not load, is refused, or returns no JSON; `sandbox` - the sandbox could not run it (timeout,
    CPU or memory limit, killed, unreadable DB, the server died)."""

    value: Any
    error: str | None
    elapsed_ms: float
    fault: Fault | None = None


@dataclass(frozen=True, slots=True)
class Kept:
    """A DB's bytes that many verifications share (a scenario's pristine template), named by their content hash
    (`digest`, the caller's: equal digests must mean equal bytes). With `reuse`, they go to the verifier server
    once and to each kept worker once, instead of with every job; each job still opens its own copy."""

    digest: str
    data: bytes


@dataclass(slots=True)
class KeptStats:
    """How kept templates travelled per job in a kept worker: already there (`worker_hits`) or sent with the job
    (`worker_sends`: from the runtime straight to the worker that lacks it; the verifier server never holds one)."""

    worker_hits: int = 0
    worker_sends: int = 0


class Sandbox:
    """A pre-forked verifier server (see `_fork_server`)."""

    def __init__(self, *, max_parallel: int = 0, memory_mb: int = 512,
                 module: str = "awm_runtime.verifiers._fork_server", unsafe: bool = False,
                 reuse: bool = False, kept_bytes: int = KEPT_BYTES) -> None:
        self.max_parallel = max_parallel or 4 * (os.cpu_count() or 2)
        self.memory_mb = memory_mb
        self.module = module
        self.unsafe = unsafe
        self.reuse = reuse
        if reuse:
            numpy()  # a final DB's changed pages are found with it: imported now, not on the event loop
        self.kept_bytes = kept_bytes
        self.kept_stats = KeptStats()
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}  # job id -> its result
        self._leases: dict[int, asyncio.Future[dict[str, Any]]] = {}  # job id -> its kept worker's lease
        self._fds: socket.socket | None = None  # the server passes kept workers' sockets on it
        self._notes: int | None = None  # the notes pipe's write end (`_note`)
        self._notes_full = False  # it was once full: every note goes on stdin from then on, in order
        self._direct: dict[int, tuple[dict[str, Any], Any, str]] = {}  # a kept worker's job: its JSON, plan, code
        self._resends: set[asyncio.Future[None]] = set()
        self._workers = KeptSockets(self._pending, self._done, self._kill)
        self._ids = itertools.count(1)
        self._start_lock = asyncio.Lock()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.returncode is None else None

    async def _ensure(self) -> asyncio.subprocess.Process:
        proc = self._proc
        if proc is not None and proc.returncode is None and not self._start_lock.locked():  # the server is up
            return proc
        async with self._start_lock:
            if self._proc is not None and self._proc.returncode is None:
                return self._proc
            mark_private()  # before any verifier code runs: our memory and environment are unreadable to it
            self._workers.reset()  # a previous server's workers ended with it
            if self._fds is not None:
                self._fds.close()
            self._fds, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            self._fds.setblocking(False)
            self._close_notes()
            notes, self._notes = os.pipe()
            os.set_blocking(self._notes, False)
            widen_pipe(self._notes)
            try:
                proc = await asyncio.create_subprocess_exec(
                    sys.executable, "-I", "-c", module_code(self.module), "--parent", str(os.getpid()),
                    "--max-children", str(self.max_parallel), *(["--unsafe"] if self.unsafe else []),
                    "--fds", str(theirs.fileno()), "--notes", str(notes), pass_fds=(theirs.fileno(), notes),
                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
                    env=scrubbed_env(), start_new_session=True)
            finally:
                theirs.close()
                os.close(notes)
            assert proc.stdout is not None
            try:
                hello = await asyncio.wait_for(read_frame(proc.stdout), START_TIMEOUT_S)
            except (TimeoutError, asyncio.IncompleteReadError, FrameError) as exc:
                kill_process(proc, release=True)  # its pipes too: nothing is left for the loop to close later
                raise RuntimeError(f"the verifier server did not start ({type(exc).__name__})") from exc
            if not hello.get("ready"):
                kill_process(proc, release=True)
                raise RuntimeError("the verifier server did not start")
            self._proc = proc
            self._reader = asyncio.get_running_loop().create_task(self._read_replies(proc))
            return proc

    async def _read_replies(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        try:
            while True:
                reply = await read_frame(proc.stdout)
                job_id = int(reply.pop("id", -1))
                lease = self._leases.pop(job_id, None)
                if "wid" in reply:  # a new kept worker for the job: its result will come from the worker
                    entry = self._direct.get(job_id)
                    worker = self._workers.lease(job_id, reply, self._fds, entry[2] if entry else "")
                    if worker is None:  # it ended before: it cannot be sent the job
                        self._kill(int(reply["wid"]), "verifier process ended before its job was sent")
                        reply = {"ok": False, "error": "the kept verifier worker ended before its job was sent"}
                    elif lease is None:  # not awaited: the caller stopped waiting (the server is told, `cancel`),
                        if entry is not None:  # or the idle worker it was given had ended: this one gets the job
                            self._resends.add(task := asyncio.ensure_future(self._send(worker, job_id)))
                            task.add_done_callback(self._resends.discard)
                        continue
                if "ok" in reply and (future := self._pending.pop(job_id, None)) is not None and not future.done():
                    future.set_result(reply)
                if lease is not None and not lease.done():
                    lease.set_result(reply)
        except (asyncio.IncompleteReadError, ConnectionError, FrameError):
            pass
        finally:
            if self._proc is proc:
                self._proc = None
                kill_process(proc, release=True)  # its pipes closed on this loop, not at GC after the loop ends
                self._workers.reset()
            for future in (*self._pending.values(), *self._leases.values()):
                if not future.done():
                    future.set_result({"ok": False, "error": "the verifier server stopped while verifying"})
            self._pending.clear()
            self._leases.clear()

    def _tell(self, request: dict[str, Any]) -> None:
        """Send the server `request`, answered by nothing (a server gone needs no telling)."""
        with contextlib.suppress(Exception):
            self._flush(encode(request))

    def _done(self, job_id: int, clean: bool) -> None:
        """Tell the server a kept worker's job is over: its worker is idle again (`clean`: a note, read when the
        server next wakes) or is to be killed (at once, on stdin)."""
        frame = encode({"op": "done", "id": job_id, "clean": clean})
        if clean:
            self._note(frame)
        else:
            with contextlib.suppress(Exception):
                self._flush(frame)

    def _note(self, frame: bytes) -> None:
        """Write `frame` on the notes pipe, which the server reads whenever it wakes (first, before stdin, a
        worker's end or a deadline) and every `NOTES_POLL_S` while it has kept workers, but which never wakes it:
        a kept worker's job costs the server no wake-up of its own (it was ~60 us of a verification's CPU, and
        the write that woke it ~30 us of the runtime's). A pipe that is full (the server stopped reading it) is
        given up: this note and every later one go on stdin, in order."""
        if self._notes is not None and not self._notes_full and len(frame) <= select.PIPE_BUF:
            try:
                os.write(self._notes, frame)  # a write of at most PIPE_BUF bytes is whole or nothing
                return
            except BlockingIOError:
                self._notes_full = True
            except OSError:
                pass
        with contextlib.suppress(Exception):
            self._flush(frame)

    def _flush(self, *frames: bytes) -> None:
        proc = self._proc
        if frames and proc is not None and proc.stdin is not None and proc.returncode is None:
            proc.stdin.write(b"".join(frames))

    def _close_notes(self) -> None:
        if self._notes is not None:
            os.close(self._notes)
            self._notes = None
        self._notes_full = False

    def _kill(self, wid: int, why: str) -> None:
        """Have the server kill kept worker `wid` (the runtime read something from it that is not one result)."""
        self._tell({"op": "kill", "wid": wid, "why": why})

    async def run(self, code: str, function: str, kwargs: dict[str, Any], *, timeout_s: float = 20.0,
                  cpu_s: float | None = None, readable: tuple[str, ...] = (),
                  data: dict[str, bytes | Kept] | None = None) -> SandboxResult:
        """Run `function` from `code` with the keyword arguments it accepts among `kwargs`.

        `readable` are files the verifier must be able to read (checked, with a clear error, before it runs);
        with the `*_db_path` arguments they are all it can read. `data`: with `reuse`, the bytes of each DB
        by the path the verifier is given (a `Kept` template travels once, by its digest); the job then runs in a
        kept worker, which reads no file.
        """
        started = time.perf_counter()
        try:
            proc = await self._ensure()
        except RuntimeError as exc:
            return SandboxResult(None, str(exc), 0.0, "sandbox")
        job_id = next(self._ids)
        # The server starts each job's clock when its child starts; jobs queued ahead of this one may each
        # take up to `timeout_s` per round of `max_parallel`. Waiting less would blame a verifier for a queue.
        rounds = len(self._pending) // self.max_parallel + 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[job_id] = future
        # What the job may read: the files named, and the DBs it is given (nothing else: the OS enforces it).
        dbs = [str(v) for k, v in kwargs.items() if k.endswith("_db_path") and v]
        job = {"id": job_id, "code": code, "function": function, "kwargs": kwargs, "timeout_s": timeout_s,
               "cpu_s": max(1, int(cpu_s if cpu_s is not None else timeout_s + 1)), "memory_mb": self.memory_mb,
               "readable": list(dict.fromkeys([*readable, *dbs]))}
        assert proc.stdin is not None
        kept_worker = self.reuse and data is not None
        try:
            if kept_worker:
                assert data is not None
                reply = await self._run_kept(proc, job, data, rounds * timeout_s + GRACE_S, future)
            else:
                self._flush(encode(job))
                await proc.stdin.drain()
                async with asyncio.timeout(rounds * timeout_s + GRACE_S):  # no task, no shield: a timer on this one
                    reply = await future
        except (ConnectionError, TimeoutError) as exc:
            self._pending.pop(job_id, None)
            self._leases.pop(job_id, None)
            return SandboxResult(None, f"the verifier server failed ({type(exc).__name__})",
                                 (time.perf_counter() - started) * 1000, "sandbox")
        except asyncio.CancelledError:
            # The caller stopped waiting: forget the job and have the server drop or kill it (a kept worker that
            # already wrote its result stays, clean: the result is dropped when it arrives).
            self._leases.pop(job_id, None)
            if self._pending.pop(job_id, None) is not None and proc.returncode is None:
                with contextlib.suppress(Exception):
                    self._flush(encode({"op": "cancel", "id": job_id}))
            raise
        elapsed = (time.perf_counter() - started) * 1000
        kept = reply.pop("kept", None)
        if isinstance(kept, list) and len(kept) == 2:
            self.kept_stats.worker_hits += int(kept[0])
            self.kept_stats.worker_sends += int(kept[1])
        if not reply.get("ok"):
            fault = reply.get("fault")  # absent: the server ended the child (timeout, limits, killed)
            return SandboxResult(None, str(reply.get("error") or "verifier failed"), elapsed,
                                 fault if fault in ("raised", "verifier") else "sandbox")
        return SandboxResult(reply.get("value"), None, elapsed)

    async def _run_kept(self, proc: asyncio.subprocess.Process, job: dict[str, Any], data: dict[str, bytes | Kept],
                        wait_s: float, future: asyncio.Future[dict[str, Any]]) -> dict[str, Any]:
        """Run `job` in a kept worker: plan what its DBs send (a template by digest, a final DB as the pages where it
        differs, `_direct.plan`); take an idle worker of its code this process holds (noting it for the server, whose
        clock for the job starts now: `run`, `_note`) or ask the server for a new one (`lease`); write the job to the
        worker's socket, and await its result (or the server's word that it ended)."""
        job_id = int(job["id"])
        sent = plan(data, self.kept_bytes, Kept)
        code = code_digest(job["code"])
        request = {"id": job_id, "code": code, "timeout_s": job["timeout_s"], "cpu_s": job["cpu_s"],
                   "memory_mb": job["memory_mb"]}
        work = {k: job[k] for k in ("id", "code", "function", "kwargs")}
        self._direct[job_id] = (work, sent, code)  # for a new worker, should the one it is given end before it starts
        try:
            async with asyncio.timeout(wait_s):  # no task, no shield: a timer on this one
                worker = self._workers.take(code)
                if worker is not None:
                    worker.jobs.add(job_id)
                    self._note(encode({"op": "run", "wid": worker.wid, "started": time.monotonic(), **request}))
                else:
                    lease_future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
                    self._leases[job_id] = lease_future
                    self._flush(encode({"lease": True, **request}))
                    await proc.stdin.drain()  # type: ignore[union-attr]
                    lease = await lease_future
                    worker = self._workers.by_wid.get(int(lease.get("wid", -1)))
                    if "ok" in lease or worker is None:  # the job ended before it had a worker
                        return lease
                await self._send(worker, job_id)
                return await future
        finally:
            self._direct.pop(job_id, None)

    async def _send(self, worker: Any, job_id: int) -> None:
        """Write job `job_id` (its frame, `_direct`) to `worker`; count its templates' travel."""
        entry = self._direct.get(job_id)
        if entry is None:
            return
        hits, sends = await self._workers.send(worker, entry[0], entry[1], self.kept_bytes)
        self.kept_stats.worker_hits += hits
        self.kept_stats.worker_sends += sends

    def served_by(self) -> list[int]:
        """The pids of the server and of its processes now alive (forks, kept workers): whose CPU a verification
        spends. Empty without a server."""
        pid = self.pid
        if pid is None:
            return []
        try:
            with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as fh:
                return [pid, *map(int, fh.read().split())]
        except OSError:
            return [pid]

    async def aclose(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            await stop_process(proc, grace_s=5.0)
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        self._release()

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            kill_process(proc, release=True)
        self._release()

    def _release(self) -> None:
        """Close the kept workers' sockets and the descriptor socket (their server has ended)."""
        self._workers.reset()
        self._close_notes()
        if self._fds is not None:
            self._fds.close()
            self._fds = None
