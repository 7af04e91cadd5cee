"""The verifier server's kept workers (`Sandbox(reuse=True)`): verifications that do not each pay a fork.

A job that brings its DBs' bytes runs in a kept worker (`_warm_worker`) for its verifier's code: an idle one if
there is one, else a new fork. One job at a time a worker; each worker serves one code only, so what one
verification leaves behind in its worker can reach only later runs of the same code (which decides those
episodes' rewards anyway), never another verifier's.

The server supervises; the job's bytes and its result do not pass through it (issue 49: relaying them was a third
of a verification's CPU), and a job in a worker already there costs it no reply:

1. a job of a code the runtime holds no idle worker for asks for one (`lease`: the job's id, its code's digest,
   its limits); the server forks a worker, starts the job's clock, passes the worker's end of a socketpair to the
   runtime over the runtime's descriptor socket (SCM_RIGHTS, once per worker), then answers `{id, wid, fd}`;
2. a job of a code the runtime holds an idle worker for goes to it at once: the runtime notes it for the server
   (`run`: the job's id, the worker, its limits, when it was sent; no reply) on the notes pipe, which the server
   reads whenever it wakes, before anything else, and every `_fork_server.NOTES_POLL_S` once it has forked a
   worker, but which never wakes it (issue 49: that wake-up was most of the server's CPU a verification). The
   job's clock starts when the runtime sent it. If that worker ended meanwhile, the server takes the `run` as a
   `lease` and the runtime sends the job to the new worker;
3. the runtime writes the job (with the templates the worker lacks: the runtime mirrors what each worker holds,
   `_direct.mirror`) to the worker's socket, and reads its result there (with the job's id: a reply can only
   answer a job given to that worker);
4. the runtime tells the server the job is over (`done`) and whether the worker is clean (a value, or the verify
   function raising on its DB: it stays idle, held by the runtime for its next job of that code; a note) or not
   (anything else, or its `MAX_JOBS`-th job: the server kills it; on stdin, at once). The server reads the notes
   before stdin, so it sees both in the order they were written.

The worker writes nothing to the server; the server watches its pidfd, which is readable when it ends. The server
keeps the guarantees per job it gives a forked child: the wall-clock timeout (a job noted is seen within
`NOTES_POLL_S`, its deadline counted from when it was sent), the CPU seconds (a watchdog on the worker's CPU
clock, every `CPU_POLL_S` while one runs, counted from when the server saw the job), kill and replacement,
cancellation. A job it ends
(timeout, CPU, cancelled, killed, the worker died) gets its reply from the server, with the same words as a
fork's; the runtime takes whichever comes first of that and the worker's own result (as the server did when it
relayed). The result's size bound is enforced by whoever reads the result: the runtime (`_direct`), which then has
the server kill the worker (`kill`). The runtime holds at most `MAX_IDLE` idle workers (the least recently used
killed first, `kill`); a worker that ends is closed by the runtime at EOF on its socket.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import signal
import socket
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from itertools import count
from typing import Any

from awm_runtime.isolation import encode, process_cpu_s
from awm_runtime.verifiers._outcome import _Child, reply_frame
from awm_runtime.verifiers._warm_worker import serve

MAX_IDLE = 16  # idle kept workers, over all codes
MAX_JOBS = 1000  # jobs a worker serves before it retires
CPU_POLL_S = 0.1
SOCKET_BUFFER = 4 << 20  # asked for the runtime's end: a job with its DBs passes in one write (the system caps it)


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
    """A kept worker: its id (the runtime's name for its socket), the code it serves, its pidfd, and the job it
    runs (None: idle)."""

    wid: int
    pid: int
    code: str
    status_fd: int  # its pidfd: readable when it ends
    job: _Child | None = None
    cpu_at_start: float = 0.0
    served: int = 0


class WarmPool:
    """The server's kept workers, by the verifier code they serve."""

    def __init__(self, sel: selectors.BaseSelector, proxies: dict[str, Any], parent: int, unsafe: bool,
                 reap_later: Callable[[int], None], send: Callable[[bytes], None],
                 fds: socket.socket | None) -> None:
        self.sel, self.proxies, self.parent, self.unsafe = sel, proxies, parent, unsafe
        self.reap_later, self.send, self.fds = reap_later, send, fds
        self.idle: OrderedDict[int, Worker] = OrderedDict()  # status_fd -> idle worker, least recently used first
        self.busy: dict[int, Worker] = {}  # status_fd -> worker running a job
        self._wids = count(1)
        self.forked = False  # whether it ever forked a worker (the runtime may then note a job to one at any time)

    def _fork(self, code: str, memory_mb: int, cpu_s: int) -> tuple[Worker, socket.socket]:
        theirs, mine = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            # Its whole life's CPU, as a backstop; each job's own limit is the watchdog's.
            serve(theirs.detach(), self.proxies, os.getppid(), self.unsafe, memory_mb, cpu_s * MAX_JOBS + 1)
        theirs.close()
        self.forked = True
        with contextlib.suppress(OSError):
            mine.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
        pidfd = os.pidfd_open(pid)
        self.sel.register(pidfd, selectors.EVENT_READ)
        return Worker(next(self._wids), pid, code, pidfd), mine

    def start(self, job: dict[str, Any]) -> None:
        """Lease a new worker for `job`'s code to the runtime (it asks only when it holds no idle one of that code):
        fork it, start the job's clock, send the runtime the worker's socket, then the lease `{id, wid, fd}`."""
        if self.fds is None:  # a server started without the runtime's descriptor socket: no lease can be kept
            self.send(encode({"ok": False, "id": int(job["id"]), "elapsed_ms": 0.0,
                              "error": "the verifier server was started without a descriptor socket"}))
            return
        worker, mine = self._fork(str(job["code"]), int(job["memory_mb"]), int(job["cpu_s"]))
        self._clock(worker, job)
        lease = {"id": int(job["id"]), "wid": worker.wid, "fd": True}
        try:  # before the lease: the runtime reads the socket when it reads the lease
            socket.send_fds(self.fds, [b"%d" % worker.wid], [mine.fileno()])
        except OSError:
            lease["fd"] = False  # the runtime is going away; the job ends with its worker
        mine.close()
        self.send(encode(lease))

    def run(self, job: dict[str, Any]) -> bool:
        """The runtime runs `job` in idle worker `wid`, which it holds (its job is already on the way): start its
        clock. False if that worker has ended meanwhile: the job then needs a lease (`start`) instead."""
        fd = next((fd for fd, w in self.idle.items() if w.wid == int(job["wid"])), None)
        if fd is None:
            return False
        self._clock(self.idle.pop(fd), job)
        return True

    def _clock(self, worker: Worker, job: dict[str, Any]) -> None:
        # A `run` noted by the runtime is read up to `NOTES_POLL_S` late: its clock starts when the runtime sent it
        # (the monotonic clock is the machine's, the same in both processes), never later than now.
        now = time.monotonic()
        started = min(now, float(job.get("started", now)))
        timeout = float(job["timeout_s"])
        worker.job = _Child(worker.pid, int(job["id"]), started + timeout, started, timeout, int(job["cpu_s"]))
        worker.cpu_at_start = process_cpu_s(worker.pid) if job["cpu_s"] < timeout else 0.0  # only the watchdog needs it
        self.busy[worker.status_fd] = worker

    def owns(self, fd: int) -> bool:
        """Whether `fd` is one of this pool's."""
        return fd in self.busy or fd in self.idle

    def on_ready(self, fd: int) -> None:
        """A worker ended (its pidfd is readable): its job, if it had one, ends with how it ended."""
        worker = self.busy.get(fd)
        if worker is not None:
            self._end(worker, "")
        else:
            self._close(self.idle.pop(fd))

    def done(self, job_id: int, clean: bool) -> None:
        """The runtime has read `job_id`'s result: its worker is idle again if `clean`, else it is killed. A job
        already ended here (a timeout that came first, a cancel) is nothing to do."""
        worker = next((w for w in self.busy.values() if w.job is not None and w.job.job_id == job_id), None)
        if worker is None:
            return
        del self.busy[worker.status_fd]
        worker.job, worker.served = None, worker.served + 1
        if clean and worker.served < MAX_JOBS:  # the runtime holds it now, for its next job of that code
            self.idle[worker.status_fd] = worker
            while len(self.idle) > 4 * MAX_IDLE:  # a backstop: the runtime keeps at most MAX_IDLE
                self._close(self.idle.popitem(last=False)[1])
        else:
            self._close(worker)

    def _end(self, worker: Worker, why: str) -> None:
        """The worker's job ends without a result (`why`, or how the worker ended): it is killed and reaped, and
        the runtime is told (it discards this if the worker's own result reached it first)."""
        job = worker.job
        assert job is not None
        self.busy.pop(worker.status_fd, None)
        job.killed = why
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker.pid, signal.SIGKILL)
        _, status = os.waitpid(worker.pid, 0)
        self._release(worker)
        self.send(reply_frame(job, status, (time.monotonic() - job.started) * 1000))

    def _close(self, worker: Worker) -> None:
        """Retire a worker with no job: kill it and reap it when it has exited."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker.pid, signal.SIGKILL)
        self._release(worker)
        self.reap_later(worker.pid)

    def _release(self, worker: Worker) -> None:
        self.sel.unregister(worker.status_fd)
        os.close(worker.status_fd)

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

    def kill(self, wid: int, why: str) -> None:
        """Kill worker `wid`, busy or idle: the runtime read something from it that is not one result (`why`)."""
        for worker in list(self.busy.values()):
            if worker.wid == wid:
                self._end(worker, why)
        for fd, worker in list(self.idle.items()):
            if worker.wid == wid:
                self._close(self.idle.pop(fd))

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
