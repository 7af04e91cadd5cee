"""The threads that run a world worker's tool calls: one at a time while each uses the CPU, more beside calls
that wait.

A world worker runs its calls on threads so that a slow or hung call holds up its own episode only
(issue 31). But threads of one interpreter that all want the CPU take turns on the GIL, and each turn
costs: in one process, 600 calls of a 20-table scenario took 3.1-4.1 ms of CPU a call on 32 threads,
and 1.1-1.5 ms on one. A batch launched at once on one scenario (the GRPO shape) fills a worker's
threads with its episodes' first calls (issue 32's note, stop 43).

So a thread must hold a *permit* to run calls, and it runs them one after another from the worker's
queue, with no hand-off between threads. One permit is out while every running call is *busy*: its
thread's CPU clock advances. A running call is *idle* once its thread used less than `MIN_CPU_S` of CPU
in a `WINDOW_S` (it sleeps, or waits on a lock or on I/O), or more than `HOG_S` in all (a heavy query,
which then shares the CPU with the calls behind it, as the interpreter's switch interval shares it).
Each idle call lets three more permits out, so a burst of hung calls all runs within a few windows. A
thread whose permit is no longer needed parks until one is. A watchdog thread reads
the clocks every `WINDOW_S` while calls wait in the queue, and sleeps otherwise.

A thread parked for `IDLE_EXIT_S` ends and closes its event loop (its epoll and self-pipe: three descriptors), so
a worker's threads follow the calls that waited side by side in the last seconds, not the most that ever did
(issue 49: on a loaded machine a call the kernel leaves unscheduled for a window looks idle, lets three
permits out, and a worker kept every thread it ever started, up to `most`: its descriptors grew through a
run). The thread that holds the last permit never ends (unless calls run in place: `run_here`, below; it then ends
after `IDLE_EXIT_S` with no call), nor one whose loop still holds tasks scenario code left.

`run_here` runs a job on the caller's thread when no call runs or waits (issue 49: the hand-off to a call
thread cost a wake-up each way, ~8 futex calls a call). It holds a permit and is judged as any running call;
once it is idle or a hog, `on_stuck` tells the caller, whose next jobs then go to the threads.

Wall time alone cannot tell a sleeping call from one the kernel has not scheduled yet. A first gate that
counted any call running past 50 ms as slow let 60-90% of a loaded worker's calls start beside another
(up to 32 at once), and saved nothing. `WINDOW_S` is longer than the scheduler's period with a dozen
runnable processes on two cores, so a call that wants the CPU gets some of it in each window.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

WINDOW_S = 0.04  # how often the watchdog reads the running calls' CPU clocks
MIN_CPU_S = 0.0005  # less CPU than this in a window: the call waits (sleep, lock, I/O)
HOG_S = 0.05  # more CPU than this in all: the call no longer holds back the ones behind it
IDLE_EXIT_S = 10.0  # a thread parked this long ends (a new one costs ~0.2 ms of CPU: a thread and an event loop)


@dataclass(slots=True)
class _Call:
    clock: int  # the CPU-time clock of the thread running the call
    started_cpu: float
    seen_cpu: float  # its clock at the watchdog's last look (or at its start)
    seen_at: float  # when that was (monotonic)
    busy: bool = True
    stuck: bool = False  # a call run in place that the watchdog found idle or hogging (`on_stuck` was called)


class CallThreads:
    """Runs `handle(job, loop)` for each submitted job on up to `most` threads, each with its own event loop.

    `handle` must not raise: it answers its job, an error included. When no thread can be started (no memory left
    for its stack), or a thread cannot make its event loop (no descriptor left for its epoll and self-pipe: scenario
    code that keeps threads or files), a queued job is answered with `refuse(job, error)` instead, so that no job
    waits on a thread that never runs. `refuse` is called holding the threads' lock: it only answers."""

    def __init__(self, handle: Callable[[Any, asyncio.AbstractEventLoop], None], most: int, *,
                 refuse: Callable[[Any, Exception], None],
                 window_s: float = WINDOW_S, min_cpu_s: float = MIN_CPU_S, hog_s: float = HOG_S,
                 idle_exit_s: float = IDLE_EXIT_S, on_stuck: Callable[[], None] | None = None) -> None:
        self.most, self.window_s, self.min_cpu_s, self.hog_s = most, window_s, min_cpu_s, hog_s
        self.idle_exit_s = idle_exit_s
        self._handle = handle
        self._refuse = refuse
        self._on_stuck = on_stuck
        self._here: _Call | None = None  # the call `run_here` runs, if one does
        self._here_seen = False  # a call ran in place since the watchdog's last look
        self._watchdog = False  # started
        self._in_place = False  # `run_here` has run a call: the last thread may end too, once idle
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)  # parked threads wait here for a permit
        self._queued = threading.Condition(self._lock)  # the watchdog waits here while no job is queued
        self._running: dict[int, _Call] = {}  # thread ident -> the call it runs
        self.threads = 0  # alive
        self.started = 0  # ever started
        self.ended = 0  # ended after `idle_exit_s` parked
        self._holders = 0  # threads holding a permit (running a call, or waiting for one in the queue)
        self._parked = 0
        self._granted = 0  # permits handed to parked threads and not yet picked up
        self._watching = False
        self.beside = 0  # calls that started while another call was running
        self.refused = 0  # jobs answered with `refuse`: no thread could be started for them, or make its loop

    def submit(self, job: Any) -> None:
        """Queue `job`; it runs when a thread with a permit is free."""
        self._jobs.put(job)
        with self._lock:
            if self.threads == 0:
                self._start()
            if self._here is not None and self._here.stuck:
                self._grant()  # handed over beside a call in place already found idle: its permits are out now
            self._watch_now()

    def run_here(self, job: Any, loop: asyncio.AbstractEventLoop) -> bool:
        """Run `job` on the calling thread, now, if no call runs or waits: the call then costs no hand-off to a
        call thread (a wake-up of another thread each way). Meanwhile it holds a permit, and the watchdog judges
        it as it judges any running call; once it is idle or a hog, `on_stuck` is called (once), so that the
        caller hands the jobs that come next to the threads. False, with nothing run, when a call runs or waits."""
        me = threading.get_ident()
        with self._lock:
            if self._running or self._here is not None or not self._jobs.empty():
                return False
            clock = time.pthread_getcpuclockid(me)  # not kept: a later thread may reuse the ident
            cpu = time.clock_gettime(clock)
            self._here = self._running[me] = _Call(clock, cpu, cpu, time.monotonic())
            self._holders += 1
            self._here_seen = self._in_place = True
            self._watch_now()
        try:
            self._handle(job, loop)
        except BaseException:  # `handle` answers its own errors
            traceback.print_exc()
        finally:
            with self._lock:
                del self._running[me]
                self._here = None
                self._holders -= 1
        return True

    @property
    def running_here(self) -> bool:
        """Whether a call runs in place (`run_here`) now."""
        return self._here is not None

    def _watch_now(self) -> None:
        """Have the watchdog look every window from now on (under the lock): a thread of its own, started once."""
        if not self._watchdog:
            self._watchdog = True
            threading.Thread(target=self._watch, daemon=True, name="call-watchdog").start()
        if not self._watching:
            self._watching = True
            self._queued.notify()

    def _start(self) -> None:
        """A new thread, holding a permit (under the lock). When none can be started (no memory left for its stack:
        scenario code that keeps threads), a queued job is answered with `refuse` instead."""
        try:
            threading.Thread(target=self._main, daemon=True, name=f"call-{self.started + 1}").start()
        except RuntimeError as exc:
            self._refuse_one(exc)
            return
        self.threads += 1
        self.started += 1
        self._holders += 1

    def _grant(self) -> None:
        """Hand out the permits now allowed while jobs wait: to parked threads first, else to new ones (under the
        lock)."""
        while not self._jobs.empty() and self._holders + self._granted < self._allowed():
            if self._parked > self._granted:
                self._granted += 1
                self._wake.notify()
            elif self.threads < self.most:
                self._start()
            else:
                break

    def _allowed(self) -> int:
        """Permits to keep out now: one, and three more for each idle call (under the lock)."""
        return 1 + 3 * sum(not call.busy for call in self._running.values())

    def _main(self) -> None:
        try:
            loop = asyncio.new_event_loop()
        except OSError as exc:
            self._cannot_start(exc)
            return
        asyncio.set_event_loop(loop)
        me = threading.get_ident()
        clock = time.pthread_getcpuclockid(me)
        while True:
            with self._lock:
                if self._holders > self._allowed() and not self._park(may_end=not asyncio.all_tasks(loop)):
                    break
                spare = self._holders > 1  # this permit may stop being needed while it waits for a job
                last = not spare and self._in_place  # the last permit's holder, where calls may run in place
            try:
                if spare:
                    job = self._jobs.get(timeout=self.window_s)
                else:
                    job = self._jobs.get(timeout=self.idle_exit_s) if last else self._jobs.get()
            except queue.Empty:
                with self._lock:
                    if last and self._jobs.empty() and not asyncio.all_tasks(loop):
                        self._holders -= 1  # no call came for its idle time: calls one at a time run in place
                        self.threads -= 1
                        self.ended += 1
                        break
                continue
            cpu = time.clock_gettime(clock)
            with self._lock:
                self.beside += bool(self._running)
                self._running[me] = _Call(clock, cpu, cpu, time.monotonic())
            try:
                self._handle(job, loop)
            except BaseException:  # `handle` answers its own errors: a raise must not end the thread with its permit
                traceback.print_exc()
            finally:
                with self._lock:
                    del self._running[me]
        loop.close()

    def _cannot_start(self, exc: OSError) -> None:
        """A thread without an event loop: answer one queued job with `refuse`, give the permit back and end. Jobs
        still queued get permits as any do (a new thread each, which refuses its job the same way while the
        descriptors stay used up)."""
        with self._lock:
            self._refuse_one(exc)
            self._holders -= 1
            self.threads -= 1
            self._grant()

    def _refuse_one(self, exc: Exception) -> None:
        """Answer a queued job, if one is queued, with `refuse` (under the lock)."""
        try:
            job = self._jobs.get_nowait()
        except queue.Empty:
            return
        self.refused += 1
        try:
            self._refuse(job, exc)
        except BaseException:  # `refuse` answers its own errors
            traceback.print_exc()

    def _park(self, may_end: bool) -> bool:
        """Give the permit back and wait for one (under the lock). False when none came within `idle_exit_s`
        and the thread `may_end`: it is no longer counted, and ends."""
        self._holders -= 1
        self._parked += 1
        deadline = time.monotonic() + self.idle_exit_s
        while not self._granted:
            left = deadline - time.monotonic()
            if left <= 0 and may_end:
                self._parked -= 1
                self.threads -= 1
                self.ended += 1
                return False
            self._wake.wait(left if may_end and left > 0 else None)
        self._granted -= 1
        self._parked -= 1
        self._holders += 1
        return True

    def _look(self) -> None:
        """Mark each call that has run a window since the last look busy or idle, from its thread's CPU clock
        (under the lock). A call that started just now is left busy."""
        now = time.monotonic()
        for call in self._running.values():
            if now - call.seen_at < self.window_s:
                continue
            cpu = time.clock_gettime(call.clock)
            call.busy = cpu - call.seen_cpu >= self.min_cpu_s and cpu - call.started_cpu < self.hog_s
            call.seen_cpu, call.seen_at = cpu, now

    def _watch(self) -> None:
        while True:
            with self._lock:
                while not self._watching:
                    self._queued.wait()
            time.sleep(self.window_s)
            stuck = False
            with self._lock:
                here, seen, self._here_seen = self._here, self._here_seen, False
                if self._jobs.empty() and here is None:
                    self._watching = seen  # calls run in place come one after another: keep looking a window more
                    continue
                self._look()
                if here is not None and not here.busy and not here.stuck:
                    here.stuck = stuck = True
                self._grant()
            if stuck and self._on_stuck is not None:
                self._on_stuck()
