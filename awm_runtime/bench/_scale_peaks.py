"""Scale, the parts a batch needs: peak open files and memory of the run's processes, and a batch's makespan.

A batch (`awm-bench scale --batch`) launches every episode at once, as a GRPO step or an eval does,
and is judged by its makespan: from the model server's first request to its last reply, against
the longest episode's model time (its calls x the latency), the least any runtime could take.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from awm_runtime.bench._procs import _memory, descendants, kind_of, resident_mib

# Issue 32: a batch launched at once, 1,000 x 5 s, spread or on one scenario.
BATCH_TARGET = 0.85
# Issue 49: first request to last episode recorded, for every batch shape it names.
BATCH_TARGET_SHARE = 0.90


def open_files_limit() -> int:
    """This process's soft open-file limit (what its children inherit)."""
    import resource

    return int(resource.getrlimit(resource.RLIMIT_NOFILE)[0])


def open_files(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


@dataclass(slots=True)
class Peaks:
    """Samples the run's process tree (`root` and its descendants, less `exclude`: the model server).

    `start()` samples from a process of its own, at the lowest CPU priority, so the scan neither holds
    the runtime's GIL nor counts as its CPU: at 10,000 episodes a pass lists about 30,000 descriptors,
    and in a thread of the runtime the sampler took 25.6 CPU-s of a 470 s run. Each pass is sent back as
    a line and read by a thread that only parses it; `stop()` ends the sampler after a last pass, and
    `cpu_s` is then its CPU (reaped, so it is in this process's children's CPU: leave it out of theirs).

    RSS and open files are read every sample; PSS only every `pss_every`-th (and at the first and the last),
    because smaps_rollup walks each process's page tables: 55-65 ms of CPU per sample of a 1,000-episode
    batch, 13% of a core at two samples a second, against about 1 ms for the kernel's RSS counters."""

    exclude: set[int] = field(default_factory=set)
    every_s: float = 1.0
    pss_every: int = 10
    root: int = field(default_factory=os.getpid)
    rss_mib: float = 0.0  # the largest sum of RSS over the run's processes
    pss_mib: float = 0.0
    files_runtime: int = 0  # open files of the runtime's own process
    files_all: int = 0  # summed over the run's processes
    processes: int = 0
    shards_rss_mib: float = 0.0  # the last sample: RSS of the run's shard processes
    other_rss_mib: float = 0.0  # and of its other children (world workers, verifiers)
    cpu_s: float = 0.0  # the sampler's own CPU, to leave out of the run's
    _proc: subprocess.Popen[bytes] | None = None
    _reader: threading.Thread | None = None
    _samples: int = 0

    def sample(self, *, pss: bool = False) -> None:
        """One pass over the tree; with PSS when `pss`, or on every `pss_every`-th pass."""
        started = time.thread_time()
        with_pss = pss or self._samples % self.pss_every == 0
        self._samples += 1
        rss = pss_sum = shards = other = 0.0
        files = 0
        pids = descendants(self.root) - self.exclude
        for pid in pids:
            r = resident_mib(pid)
            rss += r
            if with_pss:
                pss_sum += _memory(pid)[1]
            n_files = open_files(pid)
            files += n_files
            if pid == self.root:
                self.files_runtime = max(self.files_runtime, n_files)
            elif kind_of(pid, self.root) == "shard":
                shards += r
            else:
                other += r
        self.shards_rss_mib, self.other_rss_mib = shards, other
        self.rss_mib, self.pss_mib = max(self.rss_mib, rss), max(self.pss_mib, pss_sum)
        self.files_all = max(self.files_all, files)
        self.processes = max(self.processes, len(pids))
        self.cpu_s += time.thread_time() - started

    def start(self) -> None:
        """Sample every `every_s` from a sampler process until `stop()`."""
        command = [sys.executable, "-m", "awm_runtime.bench._scale_peaks", "--root", str(self.root),
                   "--every", str(self.every_s), "--pss-every", str(self.pss_every),
                   *[a for pid in sorted(self.exclude) for a in ("--exclude", str(pid))]]
        self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._reader = threading.Thread(target=self._read, name="awm-bench-peaks", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            self._merge(orjson.loads(line))

    def _merge(self, seen: dict[str, Any]) -> None:
        self.rss_mib, self.pss_mib = max(self.rss_mib, seen["rss_mib"]), max(self.pss_mib, seen["pss_mib"])
        self.files_runtime = max(self.files_runtime, seen["files_runtime"])
        self.files_all, self.processes = max(self.files_all, seen["files_all"]), max(self.processes, seen["processes"])
        self.shards_rss_mib, self.other_rss_mib = seen["shards_rss_mib"], seen["other_rss_mib"]
        self.cpu_s = seen["cpu_s"]

    def stop(self) -> None:
        """A last pass, with PSS, and the sampler's end (blocking: call it off the event loop)."""
        proc, self._proc = self._proc, None
        if proc is None:
            self.sample(pss=True)
            return
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()  # the sampler's cue for its last pass
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if self._reader is not None:
            self._reader.join(10)

    def to_dict(self) -> dict[str, Any]:
        return {"peak_rss_mib": round(self.rss_mib, 1), "peak_pss_mib": round(self.pss_mib, 1),
                "peak_open_files_runtime": self.files_runtime, "peak_open_files_all": self.files_all,
                "peak_processes": self.processes, "bench_sampler_cpu_s": round(self.cpu_s, 2)}

    def _line(self) -> bytes:
        return orjson.dumps({"rss_mib": self.rss_mib, "pss_mib": self.pss_mib, "files_runtime": self.files_runtime,
                             "files_all": self.files_all, "processes": self.processes,
                             "shards_rss_mib": self.shards_rss_mib, "other_rss_mib": self.other_rss_mib,
                             "cpu_s": time.process_time()}) + b"\n"


def _sampler_main() -> None:
    """`python -m awm_runtime.bench._scale_peaks`: sample until stdin closes, a line a pass, then a last pass."""
    import argparse
    import selectors

    parser = argparse.ArgumentParser()
    parser.add_argument("--root", type=int, required=True)
    parser.add_argument("--every", type=float, default=1.0)
    parser.add_argument("--pss-every", type=int, default=10)
    parser.add_argument("--exclude", type=int, action="append", default=[])
    args = parser.parse_args()
    # The measured processes come first; a pass that waits for a core samples a moment later. Not `yield_cpu`:
    # the sampler shares the bench's session, so lowering that session's autogroup would lower the runtime too.
    os.nice(19)
    peaks = Peaks(exclude={*args.exclude, os.getpid()}, every_s=args.every, pss_every=args.pss_every, root=args.root)
    out = sys.stdout.buffer
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(sys.stdin.fileno(), selectors.EVENT_READ)
            while True:
                peaks.sample()
                out.write(peaks._line())
                out.flush()
                if sel.select(args.every) and not os.read(sys.stdin.fileno(), 4096):
                    break  # stdin closed: the run is over
        peaks.sample(pss=True)
        out.write(peaks._line())
        out.flush()
    except BrokenPipeError:  # the bench is gone (killed): nobody reads the figures
        os._exit(0)


def batch_figures(server_stats: dict[str, Any], calls: list[int], latency: float, run_started_unix: float,
                  run_ended_unix: float, bench_started_unix: float, target: float = BATCH_TARGET,
                  records: Path | None = None) -> dict[str, Any]:
    """Makespan from the model server's first request to its last reply, against the ideal: the longest
    episode's model time. Also what came before (preparing: worlds, preflight) and after (the last
    verifications and the logs), and, with the run's `records` (episodes.jsonl, whose last write is the last
    episode recorded), the share of ideal: ideal / (first request -> last episode recorded)."""
    first, last = server_stats.get("first_request_unix"), server_stats.get("last_reply_unix")
    if first is None or last is None or not calls:
        return {"makespan_s": None, "ideal_makespan_s": None, "efficiency": None, "share_of_ideal": None}
    makespan = last - first
    ideal = max(calls) * latency
    recorded = records.stat().st_mtime if records is not None and records.is_file() else None
    to_record = recorded - first if recorded is not None else None
    return {"makespan_s": round(makespan, 2), "ideal_makespan_s": round(ideal, 2),
            "efficiency": round(ideal / makespan, 4) if makespan > 0 else None,
            "first_request_to_last_record_s": None if to_record is None else round(to_record, 2),
            "share_of_ideal": round(ideal / to_record, 4) if to_record else None,
            "prepare_s": round(run_started_unix - bench_started_unix, 2),
            "run_start_to_first_request_s": round(first - run_started_unix, 2),
            "last_reply_to_run_end_s": round(run_ended_unix - last, 2),
            "first_request_to_run_end_s": round(run_ended_unix - first, 2),
            "target": target, "met": makespan > 0 and ideal / makespan >= target}


def headline(batch: dict[str, Any] | None, lost: int, recorded: int, lag_p99_ms: float,
             lag_target_ms: float) -> list[str]:
    """The row issue 49 judges a shape by: share of ideal (a batch's; `unknown` for a steady run or without
    the server's times), episodes lost (planned but not recorded), loop-lag p99 against its target."""
    share = (batch or {}).get("share_of_ideal")
    shown = "unknown" if share is None else f"{share:.1%} of ideal"
    target = f">= {BATCH_TARGET_SHARE:.0%}, 0 lost, lag < {lag_target_ms:.0f} ms"
    return ["share of ideal | lost | loop lag p99", f"{shown} | {lost:,} of {recorded + lost:,} | {lag_p99_ms:.0f} ms",
            target]


def reply_to_request_gaps(events: Path, turns: int = 3) -> dict[str, dict[str, float]] | None:
    """For each of an episode's first `turns` policy replies, the seconds until its next request went out: its
    step (parse, tool calls, the world's and the loop's queues). p50 and max over the episodes, from the run's
    `model_called` events (a request left at the event's time minus its latency). A batch launched at once
    waits here in its first turns, when every episode asks the world at once."""
    if not events.is_file():
        return None
    replies: defaultdict[str, list[tuple[float, float]]] = defaultdict(list)
    with events.open("rb") as fh:
        for line in fh:
            if b'"model_called"' not in line:
                continue
            event = orjson.loads(line)
            if event.get("event") == "model_called" and event.get("role") == "policy":
                at = datetime.fromisoformat(event["timestamp"]).timestamp()
                replies[event["episode_id"]].append((at, float(event["latency_s"])))
    gaps: defaultdict[int, list[float]] = defaultdict(list)
    for calls in replies.values():
        calls.sort()
        for k in range(1, min(len(calls), turns + 1)):
            gaps[k].append(calls[k][0] - calls[k][1] - calls[k - 1][0])
    return {str(k): {"p50": round(statistics.median(v), 2), "max": round(max(v), 2), "episodes": len(v)}
            for k, v in sorted(gaps.items())}


class BurningTransport:
    """A Transport that burns `seconds` of CPU on the event loop before each attempt (`--inject-ms`): a known
    overhead per call, to check that the benchmark's CPU per call moves by that much."""

    def __init__(self, inner: Any, seconds: float) -> None:
        self.inner, self.seconds = inner, seconds

    async def attempt(self, route: Any, messages: Any, params: Any, timeout_s: float) -> Any:
        until = time.thread_time() + self.seconds
        while time.thread_time() < until:
            pass
        return await self.inner.attempt(route, messages, params, timeout_s)


def slices_figures(summary: dict[str, Any], shards: list[dict[str, Any]]) -> dict[str, Any]:
    """The loop slices of every process of the run, added up (awm_runtime/_slices.py): how many episode steps
    queued for their share of an event loop, and how long they waited."""
    parts = [p for p in (summary.get("loop_slices"), *(s.get("loop_slices") for s in shards)) if p]
    steps, waited = sum(p["steps"] for p in parts), sum(p["waited"] for p in parts)
    wait_s = sum(p["wait_s"] for p in parts)
    return {"steps": steps, "waited": waited, "wait_s": round(wait_s, 3),
            "mean_wait_ms": round(wait_s / waited * 1000, 2) if waited else 0.0,
            "max_wait_ms": max((p["max_wait_ms"] for p in parts), default=0.0)}


if __name__ == "__main__":
    _sampler_main()
