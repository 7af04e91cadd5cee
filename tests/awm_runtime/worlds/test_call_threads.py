"""A world worker's call threads: one call at a time while each uses the CPU; calls that wait, or hog the CPU, let
the calls behind them start."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from awm_runtime.worlds._call_threads import CallThreads


def _never(job: Any, exc: OSError) -> None:
    raise AssertionError(f"a call thread could not make its event loop: {exc}")


def _burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class _Log:
    """Each job is (name, work); the handler records when it started and ended."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.starts: dict[str, float] = {}
        self.ends: dict[str, float] = {}
        self.done = threading.Semaphore(0)

    def handle(self, job: tuple[str, Callable[[], None]], loop: Any) -> None:
        name, work = job
        assert loop is not None
        with self.lock:
            self.starts[name] = time.monotonic()
        try:
            work()
        finally:
            with self.lock:
                self.ends[name] = time.monotonic()
            self.done.release()

    def wait(self, n: int, timeout_s: float = 20.0) -> None:
        for _ in range(n):
            assert self.done.acquire(timeout=timeout_s), "a call never ended"


def _sleeper_then_quick(threads: CallThreads, sleeper: str, quick: str, *, sleep_s: float, gap_s: float) -> None:
    """Send a call that sleeps `sleep_s`, then, `gap_s` later, six quick calls named `quick` + 0..5 behind it."""
    threads.submit((sleeper, lambda: time.sleep(sleep_s)))
    time.sleep(gap_s)
    for i in range(6):
        threads.submit((f"{quick}{i}", lambda: _burn(0.001)))


def test_calls_that_use_the_cpu_run_one_after_another_on_one_thread() -> None:
    log = _Log()
    # a burning call is not left unscheduled for 0.2 s, even on a busy machine
    threads = CallThreads(log.handle, 32, refuse=_never, window_s=0.2)
    for i in range(8):
        threads.submit((f"c{i}", lambda: _burn(0.02)))
    log.wait(8)
    assert threads.threads == 1 and threads.beside == 0
    order = sorted(log.starts, key=log.starts.__getitem__)
    assert order == [f"c{i}" for i in range(8)]  # in the order they were sent
    assert all(log.starts[b] >= log.ends[a] for a, b in itertools.pairwise(order))


def test_a_sleeping_call_lets_the_calls_behind_it_run() -> None:
    log = _Log()
    threads = CallThreads(log.handle, 32, refuse=_never, window_s=0.02)
    threads.submit(("sleeper", lambda: time.sleep(1.5)))
    time.sleep(0.05)
    for i in range(5):
        threads.submit((f"q{i}", lambda: _burn(0.002)))
    log.wait(5)
    assert "sleeper" not in log.ends, "the quick calls waited for the sleeping one"
    assert max(log.ends.values()) - log.starts["sleeper"] < 1.0
    log.wait(1)
    assert threads.threads <= 5  # a thread or a few beside the sleeper, not one per call


def test_a_call_that_hogs_the_cpu_shares_it_with_the_calls_behind() -> None:
    log = _Log()
    threads = CallThreads(log.handle, 32, refuse=_never, window_s=0.01, hog_s=0.05)
    threads.submit(("hog", lambda: _burn(1.5)))
    time.sleep(0.02)
    threads.submit(("quick", lambda: _burn(0.001)))
    log.wait(2)
    assert log.ends["quick"] < log.ends["hog"], "the quick call ran beside the hog, not after it"


def test_a_burst_of_hung_calls_all_runs_side_by_side_up_to_the_thread_limit() -> None:
    """40 calls that each wait (no CPU) on at most 32 threads: idle calls let three permits out each, so the first
    32 run together and the last 8 once threads come free. Each call waits until 32 have started (an event, not a
    clock): the burst can only end if 32 ran side by side, however slow the machine."""
    log = _Log()
    all_in = threading.Event()

    def hung() -> None:
        with log.lock:
            if len(log.starts) >= 32:
                all_in.set()
        all_in.wait(60)

    threads = CallThreads(log.handle, 32, refuse=_never, window_s=0.01)
    for i in range(40):
        threads.submit((f"h{i}", hung))
    log.wait(40, timeout_s=90)
    assert threads.threads == 32 and all_in.is_set()
    starts = sorted(log.starts.values())
    assert starts[31] <= min(log.ends.values())  # none ended (by the 60 s timeout) before the 32nd began


def test_threads_whose_permit_is_not_needed_park_and_the_next_burst_runs_on_one() -> None:
    log = _Log()
    # a burning thread gets CPU in each window, even when loaded
    threads = CallThreads(log.handle, 32, refuse=_never, window_s=0.05)
    _sleeper_then_quick(threads, "sleeper", "a", sleep_s=0.5, gap_s=0.03)
    log.wait(7)
    started = threads.threads
    assert started > 1
    time.sleep(0.3)  # the spare permits' holders see within a window that they are not needed
    before = threads.beside
    for i in range(6):
        threads.submit((f"b{i}", lambda: _burn(0.02)))
    log.wait(6)
    assert threads.threads == started  # parked threads are reused, none is added
    assert threads.beside == before  # the burst ran one call at a time


def test_parked_threads_take_a_permit_again_when_a_call_waits() -> None:
    log = _Log()
    threads = CallThreads(log.handle, 32, refuse=_never, window_s=0.01)
    for round_ in range(2):
        _sleeper_then_quick(threads, f"sleeper{round_}", f"q{round_}.", sleep_s=0.6, gap_s=0.03)
        log.wait(6)
        assert f"sleeper{round_}" not in log.ends, "the quick calls waited for the sleeping one"
        log.wait(1)
        if round_ == 0:
            started = threads.threads
    assert threads.threads == started  # the second round ran on the parked threads


def test_a_handler_that_raises_keeps_its_thread_and_permit(capsys: Any) -> None:
    log = _Log()

    def boom() -> None:
        raise SystemExit("scenario code exits")

    threads = CallThreads(log.handle, 32, refuse=_never)
    threads.submit(("boom", boom))
    threads.submit(("after", lambda: _burn(0.001)))
    log.wait(2)
    assert threads.threads == 1 and "after" in log.ends
    assert "SystemExit: scenario code exits" in capsys.readouterr().err


def _until(check: Callable[[], bool], timeout_s: float = 30.0) -> bool:
    end = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def test_threads_parked_past_their_idle_time_end_and_close_their_loops() -> None:
    """Issue 49: a worker kept every call thread it ever started (each an event loop: an epoll and a self-pipe).
    Threads parked for `idle_exit_s` end, closing their loops, down to the one holding the last permit; the next
    burst starts threads again."""
    log = _Log()
    loops: set[Any] = set()

    def handle(job: tuple[str, Callable[[], None]], loop: Any) -> None:
        loops.add(loop)
        log.handle(job, loop)

    threads = CallThreads(handle, 32, refuse=_never, window_s=0.02, idle_exit_s=0.3)
    for round_ in range(2):
        _sleeper_then_quick(threads, f"sleeper{round_}", f"q{round_}.", sleep_s=0.5, gap_s=0.05)
        log.wait(7)
        assert threads.started > 1 + round_
        assert _until(lambda: threads.threads == 1), f"{threads.threads} threads still alive"
        assert threads.ended == threads.started - 1
        assert sum(not loop.is_closed() for loop in loops) <= 1  # the survivor's loop, if it ran a call
    threads.submit(("after", lambda: _burn(0.001)))
    log.wait(1)
    assert threads.threads == 1


def test_a_thread_whose_loop_still_holds_a_task_is_kept() -> None:
    """Scenario code that leaves a task on its call thread's loop keeps that thread (closing the loop would
    destroy the task). Events, not a sleep, hold the first call until the others ran: they ran on other threads.
    (A thread the watchdog started that got no call holds no task, and may end.)"""
    log = _Log()
    loops: set[Any] = set()
    release = threading.Event()

    def handle(job: tuple[str, Callable[[], None]], loop: Any) -> None:
        loop.create_task(asyncio.sleep(3600))  # left pending: the loop is not running between calls
        with log.lock:
            loops.add(loop)
        log.handle(job, loop)

    threads = CallThreads(handle, 32, refuse=_never, window_s=0.02, idle_exit_s=0.1)
    threads.submit(("held", lambda: release.wait(60)))
    for i in range(6):
        threads.submit((f"q{i}", lambda: _burn(0.001)))
    log.wait(6)
    release.set()
    log.wait(1)
    assert len(loops) > 1
    time.sleep(0.8)  # several idle times: threads that may end would have ended by now
    assert not any(loop.is_closed() for loop in loops)  # every thread that ran a call is alive, with its loop


def _in_place(threads: CallThreads, job: tuple[str, Callable[[], None]]) -> tuple[threading.Thread, list[bool]]:
    """`run_here(job)` on a thread of the test's own (the world worker's main thread, in a worker)."""
    ran: list[bool] = []
    loop = asyncio.new_event_loop()

    def main() -> None:
        try:
            ran.append(threads.run_here(job, loop))
        finally:
            loop.close()

    thread = threading.Thread(target=main)
    thread.start()
    return thread, ran


def test_a_call_run_in_place_runs_on_the_caller_s_thread_and_starts_no_call_thread() -> None:
    log = _Log()
    where: list[int] = []
    stuck = threading.Event()
    threads = CallThreads(log.handle, 32, refuse=_never, window_s=0.2, on_stuck=stuck.set)
    for i in range(5):
        main, ran = _in_place(threads, (f"c{i}", lambda: (where.append(threading.get_ident()), _burn(0.002))))
        main.join(30)
        assert ran == [True] and where[-1] == main.ident
    assert threads.threads == 0 and threads.started == 0 and not stuck.is_set()


def test_no_call_runs_in_place_while_another_runs_or_waits() -> None:
    log = _Log()
    release = threading.Event()
    threads = CallThreads(log.handle, 32, refuse=_never)
    threads.submit(("held", lambda: release.wait(30)))
    assert _until(lambda: "held" in log.starts)
    main, ran = _in_place(threads, ("second", lambda: None))
    main.join(30)
    assert ran == [False] and "second" not in log.starts  # the caller submits it instead
    release.set()
    log.wait(1)


def test_a_call_in_place_that_waits_is_reported_stuck_and_the_calls_behind_it_run_on_threads() -> None:
    """The world worker reads no request while it runs a call in place: the watchdog tells it (`on_stuck`) once
    that call waits, and the calls it then hands over run beside it. Events, not clocks: this holds however slow
    the machine."""
    log = _Log()
    stuck, release = threading.Event(), threading.Event()
    stuck_calls: list[int] = []

    def on_stuck() -> None:
        stuck_calls.append(1)
        stuck.set()

    threads = CallThreads(log.handle, 32, refuse=_never, window_s=0.02, on_stuck=on_stuck)
    main, ran = _in_place(threads, ("sleeper", lambda: release.wait(60)))
    assert stuck.wait(60), "the waiting call in place was never reported"
    for i in range(5):
        threads.submit((f"q{i}", lambda: _burn(0.002)))
    log.wait(5)
    assert "sleeper" not in log.ends  # they ran beside it
    release.set()
    main.join(30)
    log.wait(1)
    assert ran == [True] and stuck_calls == [1]  # reported once
    assert _until(lambda: not threads._running)  # the last call's thread has left it (after its handler's end)
    main, ran = _in_place(threads, ("after", lambda: None))
    main.join(30)
    assert ran == [True]  # once nothing runs or waits, calls run in place again


def test_where_calls_run_in_place_the_last_call_thread_ends_too_once_idle() -> None:
    log = _Log()
    threads = CallThreads(log.handle, 32, refuse=_never, window_s=0.02, idle_exit_s=0.2)
    main, ran = _in_place(threads, ("first", lambda: None))
    main.join(30)
    _sleeper_then_quick(threads, "sleeper", "q", sleep_s=0.3, gap_s=0.03)
    log.wait(8)
    assert ran == [True] and threads.started >= 1
    assert _until(lambda: threads.threads == 0), f"{threads.threads} threads still alive"
    assert threads.ended == threads.started
    threads.submit(("after", lambda: _burn(0.001)))  # a thread again when a call is handed over
    log.wait(1)
    assert threads.threads == 1


# Each runs in a process of its own, which it leaves short of descriptors or memory: a call that sleeps holds a thread
# (its sleep lets permits out), `exhaust` takes what another thread would need, three calls are sent behind it.
_SHORT_OF = """
import json, os, resource, threading, time
from awm_runtime.worlds._call_threads import CallThreads

answered = {{}}
done = threading.Semaphore(0)

def handle(job, loop):
    name, work = job
    work()
    answered[name] = "ran"
    done.release()

def refuse(job, exc):
    answered[job[0]] = f"refused: {{getattr(exc, 'strerror', None) or exc}}"
    done.release()

resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
threads = CallThreads(handle, 32, refuse=refuse, window_s=0.02)
threads.submit(("sleeper", lambda: time.sleep(1.0)))
time.sleep(0.1)
{exhaust}
for i in range(3):
    threads.submit((f"behind{{i}}", lambda: None))
for _ in range(4):
    assert done.acquire(timeout=10), f"a call was never answered: {{answered}}"
print(json.dumps([answered, threads.refused, threads.threads]))
"""
NO_DESCRIPTORS = """
leaked = []
try:
    while True:
        leaked.append(os.dup(0))
except OSError:
    pass
"""
NO_STACK = """
with open("/proc/self/statm") as f:
    size = int(f.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (size + (4 << 20), resource.RLIM_INFINITY))
"""


def _short_of(exhaust: str) -> list[Any]:
    out = subprocess.run([sys.executable, "-c", _SHORT_OF.format(exhaust=exhaust)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    answered: list[Any] = json.loads(out.stdout)
    return answered


def test_a_thread_that_cannot_make_its_event_loop_refuses_its_call_instead_of_leaving_it_queued() -> None:
    """Issue 49: scenario code that used up its worker's descriptors left a new call thread unable to make its event
    loop; the thread died holding its permit, and the calls queued behind a running call waited until their
    timeout. Each is answered now, by `refuse`, and the running call ends as it would."""
    refused = "refused: Too many open files"
    assert _short_of(NO_DESCRIPTORS) == [{"sleeper": "ran", "behind0": refused, "behind1": refused,
                                          "behind2": refused}, 3, 1]


def test_when_no_thread_can_be_started_the_calls_behind_are_refused_instead_of_left_queued() -> None:
    """Scenario code that keeps threads can leave no memory for another call thread's stack: the calls queued behind
    a running call are answered by `refuse` (the thread's start raises), not left waiting for their timeout."""
    refused = "refused: can't start new thread"
    assert _short_of(NO_STACK) == [{"sleeper": "ran", "behind0": refused, "behind1": refused, "behind2": refused},
                                   3, 1]
