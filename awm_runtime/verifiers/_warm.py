"""The verifier server's kept workers (`Sandbox(reuse=True)`): verifications that do not each pay a fork.

A job that brings its DBs' bytes (`blobs`) runs in a kept worker (`_warm_worker`) for its verifier's code:
an idle one if there is one, else a new fork. One job at a time a worker; each worker serves one code only,
so what one verification leaves behind in its worker can reach only later runs of the same code (which
decides those episodes' rewards anyway), never another verifier's. The server keeps the same guarantees
per job as for a forked child: its wall-clock timeout, its CPU seconds (a watchdog on the worker's CPU
clock, read between jobs and every `CPU_POLL_S` while one runs), the size of its result, cancellation.
A worker is kept only after a clean result (a value, or the verify function raising on its DB); after
anything else (a refusal, a limit, a timeout, a kill, a result too large) it is killed, and only the job
that was in it is affected. At most `MAX_IDLE` idle workers are kept (the least recently used closed
first), and each retires after `MAX_JOBS` jobs.

A job names its templates (a scenario's pristine initial DB, the same for each of its episodes) by digest
(`kept`); the server holds their bytes (as the runtime sent them once) and sends each worker a
template's bytes only the first time one of its jobs needs it. What each worker holds is mirrored here
(`Worker.kept`, least recently used first, within the job's `kept_max` bytes): each job's frame tells the
worker which templates it now gets (`keep`) and which to let go (`forget`), so that the two never disagree.
A new worker (a first one, or one replacing a failed one) holds nothing and is sent what its job needs.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import signal
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from awm_runtime.isolation import HEADER, encode, process_cpu_s
from awm_runtime.verifiers._outcome import MAX_RESULT, _Child, reply_frame
from awm_runtime.verifiers._warm_worker import serve

MAX_IDLE = 16  # idle kept workers, over all codes
MAX_JOBS = 1000  # jobs a worker serves before it retires
CPU_POLL_S = 0.1


def widen_pipe(fd: int) -> None:
    """Let a pipe hold a whole job with its DBs (up to the system's limit for a user), so that it passes in one
    write and one read instead of 64 KiB turns of two processes."""
    try:
        with open("/proc/sys/fs/pipe-max-size", encoding="ascii") as fh:
            size = min(int(fh.read()), 4 << 20)
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
    except (OSError, ValueError, AttributeError):
        pass


def keep_heap() -> None:
    """glibc: keep freed memory in the heap (no trim, no mmap per large buffer), so that a job's DB bytes land in
    pages already mapped instead of ~300 fresh page faults a job (measured: they were most of the server's CPU)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD
        libc.mallopt(-3, 64 << 20)  # M_MMAP_THRESHOLD


@dataclass(slots=True)
class Worker:
    """A kept worker: its pipes, the code it serves, and the job it runs (None: idle)."""

    pid: int
    code: str
    jobs_fd: int  # the server writes jobs here (non-blocking; `pending` holds what did not fit yet)
    out_fd: int  # and reads results here
    job: _Child | None = None
    pending: list[Any] = field(default_factory=list)  # buffers of the job not written yet
    cpu_at_start: float = 0.0
    served: int = 0
    kept: OrderedDict[str, int] = field(default_factory=OrderedDict)  # digest -> size of the templates it holds


class WarmPool:
    """The server's kept workers, by the verifier code they serve."""

    def __init__(self, sel: selectors.BaseSelector, proxies: dict[str, Any], parent: int, unsafe: bool,
                 reap_later: Callable[[int], None], send: Callable[[bytes], None]) -> None:
        self.sel, self.proxies, self.parent, self.unsafe = sel, proxies, parent, unsafe
        self.reap_later, self.send = reap_later, send
        self.idle: OrderedDict[int, Worker] = OrderedDict()  # out_fd -> idle worker, least recently used first
        self.busy: dict[int, Worker] = {}  # out_fd -> worker running a job
        self.writing: dict[int, Worker] = {}  # jobs_fd -> worker whose job is still being written

    def _fork(self, code: str, memory_mb: int, cpu_s: int) -> Worker:
        jobs_r, jobs_w = os.pipe()
        out_r, out_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(jobs_w)
            os.close(out_r)
            # Its whole life's CPU, as a backstop; each job's own limit is the watchdog's.
            serve(jobs_r, out_w, self.proxies, os.getppid(), self.unsafe, memory_mb, cpu_s * MAX_JOBS + 1)
        os.close(jobs_r)
        os.close(out_w)
        widen_pipe(jobs_w)
        os.set_blocking(jobs_w, False)
        os.set_blocking(out_r, False)
        self.sel.register(out_r, selectors.EVENT_READ)
        return Worker(pid, code, jobs_w, out_r)

    def start(self, job: dict[str, Any], blobs: memoryview, templates: dict[str, Any]) -> None:
        """Run `job` in an idle worker for its code, or in a new one. `blobs`: its own DBs' bytes as the runtime
        sent them (`blob_sizes` each), forwarded as they are; its templates (`templates`, by digest, taken from
        the server's when the job arrived: a later `drop` does not reach a queued job) are sent only to a worker
        that does not hold them yet."""
        kept: dict[str, str] = job.pop("kept", None) or {}
        kept_max = int(job.pop("kept_max", 0))
        needed = templates_of(job, kept)
        missing = [d for d in needed if templates.get(d) is None]
        if missing:  # the runtime keeps what the server holds in step with it: this is a bug, said as one
            self.send(encode({"ok": False, "id": int(job["id"]), "elapsed_ms": 0.0,
                              "error": f"the verifier server does not hold template {missing[0]}"}))
            return
        code = job["code"]
        worker = next((w for w in self.idle.values() if w.code == code), None)
        if worker is not None:
            del self.idle[worker.out_fd]
        else:
            worker = self._fork(code, int(job["memory_mb"]), int(job["cpu_s"]))
        now = time.monotonic()
        timeout = float(job["timeout_s"])
        worker.job = _Child(worker.pid, int(job["id"]), now + timeout, now, timeout, int(job["cpu_s"]))
        worker.cpu_at_start = process_cpu_s(worker.pid) if job["cpu_s"] < timeout else 0.0  # only the watchdog needs it
        self.busy[worker.out_fd] = worker
        keep, forget, hits = self._mirror(worker, needed, kept_max, templates)
        worker.job.kept = (hits, len(keep))
        body = encode({**job, "kept": kept, "keep": [[d, len(templates[d])] for d in keep], "forget": forget})
        body = body[HEADER.size:]
        parts: list[Any] = [b"B" + HEADER.pack(len(body)) + body, *(templates[d] for d in keep), blobs]
        worker.pending = [HEADER.pack(sum(len(part) for part in parts)), *parts]
        self._write(worker)

    @staticmethod
    def _mirror(worker: Worker, digests: list[str], kept_max: int,
                templates: dict[str, Any]) -> tuple[list[str], list[str], int]:
        """What `worker` must be sent for a job needing the templates `digests` (those it does not hold), what
        it must let go (least recently used first, until it holds at most `kept_max` bytes, never one this job
        needs), and how many it holds already; `worker.kept` becomes what it will hold."""
        needed = dict.fromkeys(digests)
        keep: list[str] = []
        for digest in needed:
            if digest in worker.kept:
                worker.kept.move_to_end(digest)
            else:
                keep.append(digest)
                worker.kept[digest] = len(templates[digest])
        forget: list[str] = []
        held = sum(worker.kept.values())
        for digest in list(worker.kept):
            if held <= kept_max:
                break
            if digest not in needed:
                held -= worker.kept.pop(digest)
                forget.append(digest)
        return keep, forget, len(needed) - len(keep)

    def _write(self, worker: Worker) -> None:
        try:
            sent = os.writev(worker.jobs_fd, worker.pending)
        except BlockingIOError:
            sent = 0
        except OSError:  # the worker is gone: its result pipe says so
            sent = sum(len(part) for part in worker.pending)
        while worker.pending and sent >= len(worker.pending[0]):
            sent -= len(worker.pending.pop(0))
        if sent:
            worker.pending[0] = memoryview(worker.pending[0])[sent:]
        if worker.pending and worker.jobs_fd not in self.writing:
            self.writing[worker.jobs_fd] = worker
            self.sel.register(worker.jobs_fd, selectors.EVENT_WRITE)
        elif not worker.pending and self.writing.pop(worker.jobs_fd, None) is not None:
            self.sel.unregister(worker.jobs_fd)

    def owns(self, fd: int) -> bool:
        """Whether `fd` is one of this pool's."""
        return fd in self.busy or fd in self.idle or fd in self.writing

    def on_ready(self, fd: int) -> None:
        """A worker's job pipe can take more, or its result pipe has output (or EOF)."""
        if fd in self.writing:
            self._write(self.writing[fd])
        elif fd in self.busy:
            self._on_output(self.busy[fd])
        elif fd in self.idle:  # an idle worker wrote, or ended: either way it is not kept
            self._close(self.idle.pop(fd))

    def _on_output(self, worker: Worker) -> None:
        job = worker.job
        assert job is not None
        try:
            data = os.read(worker.out_fd, 1 << 16)
        except BlockingIOError:
            return
        if not data:
            self._end(worker, "")
            return
        job.buf += data
        size = HEADER.unpack_from(job.buf)[0] if len(job.buf) >= HEADER.size else 0
        if size > MAX_RESULT or len(job.buf) > HEADER.size + MAX_RESULT:
            self._end(worker, f"verifier result exceeded {MAX_RESULT >> 20} MiB")
        elif len(job.buf) > HEADER.size + size:  # more than one frame: not our worker's protocol
            self._end(worker, "verifier process wrote more than one result")
        elif len(job.buf) == HEADER.size + size and size:
            job.buf = job.buf[HEADER.size:]
            self._reply(job, 0)
            worker.job, worker.served = None, worker.served + 1
            del self.busy[worker.out_fd]
            if _clean(job.buf) and not worker.pending and worker.served < MAX_JOBS:
                self.idle[worker.out_fd] = worker
                while len(self.idle) > MAX_IDLE:
                    self._close(self.idle.popitem(last=False)[1])
            else:
                self._close(worker)

    def _reply(self, job: _Child, status: int) -> None:
        self.send(reply_frame(job, status, (time.monotonic() - job.started) * 1000))

    def _end(self, worker: Worker, why: str) -> None:
        """The worker's job ends without a result (`why`, or how the worker ended): it is killed and reaped."""
        job = worker.job
        assert job is not None
        self.busy.pop(worker.out_fd, None)
        job.killed, job.buf = why, bytearray()
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker.pid, signal.SIGKILL)
        _, status = os.waitpid(worker.pid, 0)
        self._release(worker)
        self._reply(job, status)

    def _close(self, worker: Worker) -> None:
        """Retire a worker with no job: kill it and reap it when it has exited."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker.pid, signal.SIGKILL)
        self._release(worker)
        self.reap_later(worker.pid)

    def _release(self, worker: Worker) -> None:
        self.sel.unregister(worker.out_fd)
        os.close(worker.out_fd)
        if self.writing.pop(worker.jobs_fd, None) is not None:
            self.sel.unregister(worker.jobs_fd)
        os.close(worker.jobs_fd)

    def check(self, now: float) -> float | None:
        """End jobs past their timeout or CPU seconds; when to look again (None: no job running)."""
        wake: float | None = None
        for worker in list(self.busy.values()):
            job = worker.job
            assert job is not None
            if job.deadline <= now:
                self._end(worker, f"verifier timed out after {job.timeout_s:g}s")
                continue
            at = job.deadline
            if job.cpu_s < job.timeout_s:  # else the timeout comes first: one thread spends no more CPU than time
                if process_cpu_s(worker.pid) - worker.cpu_at_start > job.cpu_s:
                    self._end(worker, f"verifier exceeded its CPU limit ({job.cpu_s}s)")
                    continue
                at = min(at, now + CPU_POLL_S)
            wake = at if wake is None else min(wake, at)
        return wake

    def cancel(self, job_id: int) -> None:
        """Kill the worker running `job_id` (its reply is discarded by the runtime)."""
        for worker in list(self.busy.values()):
            if worker.job is not None and worker.job.job_id == job_id:
                self._end(worker, "verifier cancelled")

    def pids(self) -> list[int]:
        """The kept workers' pids, busy and idle."""
        return [w.pid for w in (*self.busy.values(), *self.idle.values())]

    def stop(self) -> None:
        """End every job in a worker and close every worker."""
        for worker in list(self.busy.values()):
            self._end(worker, "verifier server stopped")
        for worker in list(self.idle.values()):
            self._close(worker)
        self.idle.clear()


def templates_of(job: dict[str, Any], kept: dict[str, str] | None = None) -> list[str]:
    """The digests of the templates `job` needs: those it names (`kept`), and those its DBs are sent against."""
    names = job.get("kept") if kept is None else kept
    return [*(names or {}).values(), *(str(delta[1]) for delta in job.get("deltas", ()))]


def _clean(body: bytes | bytearray) -> bool:
    """Whether a worker that wrote `body` may serve another job: after a value, or its verify function raising."""
    return body.startswith((b'{"ok":true', b'{"ok":false,"fault":"raised"'))
