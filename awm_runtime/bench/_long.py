"""Long run: N episodes in a row (default 100,000) on the simulated oracle; RSS and open files stay flat, none lost.

The run is real (built-in worlds, world workers, verifiers, the run directory's logs) with `--concurrency`
episodes in flight; the model is the simulated oracle in the runtime's process, so the run is bound by the
runtime's and the world's CPU, not by a model's latency. A sampler thread reads, every `--every` seconds,
the RSS and open descriptors of the runtime's process and of each of its long-lived processes (the world zygote
and workers, the verifier server), less processes that live less than a pass (kernel counters: statm and the
fd directory, microseconds a process); the verifier server's forks, a process a verification, are summed apart
and shown, not judged (as many as verifications in flight). It compares the median over the samples taken while
the run recorded its second tenth of episodes (warm: every scenario imported) with the median over its last tenth
at full concurrency (the end, before the pool drains). Flat: each judged figure within 5%.

What is judged is a creep: the runtime's RSS; its descriptors less the pipes it holds to its long-lived processes
(3 a world worker); and RSS and descriptors summed over the long-lived processes that live through both windows.
A scenario's pool starts another world worker whenever calls queue on one (up to its `workers`, within the run's
`max_world_workers`), and retires one that used its CPU allowance: a step in the sums over all processes that is
the pool's size, bounded, not a creep. Those sums and the processes started and ended between the windows are
shown beside, not judged (issue 49's decision). Lost: episodes planned that episodes.jsonl does not hold. The
threads summed over the tree are shown beside them, not judged: a world worker's call thread holds an event loop
(3 descriptors) and its threads follow the calls that waited side by side in its last seconds
(`worlds/_call_threads`), so on a loaded machine, where calls the kernel leaves unscheduled look like waiting
ones, the tree's descriptors move with the load as well as with the run.
"""
from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from awm_runtime._malloc import applied
from awm_runtime.bench._long_samples import FIELDS, Samples, thin
from awm_runtime.bench._procs import descendants, fd_count, fd_targets, kind_of, resident_mib, thread_count
from awm_runtime.bench._scale_peaks import open_files_limit

TARGET_GROWTH = 0.05  # issue 49: RSS and descriptors at the end within 5% of after the first tenth
# Episodes a slot of --concurrency runs before the runtime's RSS levels off (measured at 256 in flight: it rose
# until ~1,000 episodes, then 400 B an episode): a warm window starting earlier compares warm-up with the end.
WARM_PER_SLOT = 4
# Judged: the runtime's RSS, its descriptors less its pipes to its long-lived processes, and both summed over the
# long-lived processes that live through both windows (`flatness`: from each process's own figures).
METRICS = ("rss_runtime_mib", "rss_kept_mib", "files_runtime_own", "files_kept")
# Reported warm and end, not judged: the sums over every long-lived process and the runtime's descriptors with its
# pipes step with the pool's size (a scenario's pool starts another world worker when calls queue); each world
# worker's call thread holds 3 descriptors; the verifier's forks follow the verifications in flight.
SHOWN = ("rss_all_mib", "files_runtime", "files_all", "processes", "threads_all", "forks", "files_forks")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--episodes", type=int, default=100_000, metavar="N",
                   help="episodes to run, whole repeats of the selected tasks (default 100000)")
    p.add_argument("--concurrency", type=int, default=256, metavar="N", help="episodes in flight (default 256)")
    p.add_argument("--scenarios", default="*", metavar="GLOB", help="built-in scenarios to draw tasks from")
    p.add_argument("--every", type=float, default=1.0, metavar="S", help="seconds between samples (default 1)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR", help="keep the run directory here")


class Snapshots:
    """RSS and open descriptors of the runtime's process (`root`, default this one) and summed over its long-lived
    processes; the verifier server's forks apart.

    Long-lived: the runtime, the world zygote and workers, the verifier server (and shards, call processes). Their
    sums count only processes seen by the pass before too (every process on the first pass), so that one starting
    is counted once it runs. The verifier server forks a process per verification that lives milliseconds (seconds
    on a loaded machine): how many a pass catches follows the verifications in flight, not the run's length, so they
    are summed apart (`forks`, `files_forks`: every fork alive at the pass, and a process exiting, whose command
    line is gone), shown and not judged."""

    def __init__(self, root: int | None = None) -> None:
        self.root = os.getpid() if root is None else root
        self._before: set[int] | None = None

    def take(self) -> dict[str, Any]:
        """One pass (blocking, microseconds a process: run it off the event loop). `per_process`: each long-lived
        process's RSS and open files (the runtime's less its pipes to them), for `flatness`."""
        parents: dict[int, int] = {}
        pids = descendants(self.root, parents)
        kinds = {pid: kind_of(pid, self.root) for pid in pids}
        forks = {pid for pid in pids - {self.root}
                 if not kinds[pid] or (kinds[pid] == "verifier" and parents.get(pid) != self.root)}
        lasting = (pids if self._before is None else pids & self._before) - forks
        self._before = pids
        rss = {pid: resident_mib(pid) for pid in lasting | {self.root}}
        targets = {pid: fd_targets(pid) for pid in lasting | {self.root}}  # forks: only counted
        files = {pid: len(t) for pid, t in targets.items()} | {pid: fd_count(pid) for pid in forks}
        theirs = {t for pid in lasting - {self.root} for t in targets[pid] if t.startswith("pipe:")}
        own = sum(1 for t in targets[self.root] if t not in theirs)  # less the pipes it shares with them
        threads = sum(thread_count(pid) for pid in lasting | {self.root})
        by_kind: dict[str, int] = {}
        for pid, n in files.items():  # where descriptors grow, when they do
            kind = "verifier_fork" if pid in forks else kinds[pid] or "other"
            by_kind[kind] = by_kind.get(kind, 0) + n
        return {"rss_runtime_mib": rss[self.root], "rss_all_mib": sum(rss.values()),
                "files_runtime": files[self.root], "files_runtime_own": own,
                "files_all": sum(files[pid] for pid in lasting | {self.root}),
                "threads_all": threads, "processes": len(lasting), "forks": len(forks),
                "files_forks": sum(files[pid] for pid in forks), "files_by_kind": by_kind,
                "per_process": {pid: (rss[pid], own if pid == self.root else files[pid])
                                for pid in lasting | {self.root}}}


def flatness(samples: list[dict[str, float]], planned: int, concurrency: int,
             processes: dict[float, dict[int, tuple[float, int]]] | None = None) -> dict[str, Any]:
    """Warm (recorded in the second tenth of `planned`) against end (the last tenth, while at least 90% of
    `concurrency` were in flight): each metric's median over its window, and the growth end / warm - 1. A
    window with no sample falls back on the one sample nearest it (a short run sampled coarsely). `processes`
    (each window sample's pid -> RSS and open files, by the sample's `t`) gives the sums over the processes that
    live through both windows, `rss_kept_mib` and `files_kept` (each process's median over each window), and
    `between`: how many did, and how many started or ended between the windows."""
    def window(lo: float, hi: float, full: bool) -> list[dict[str, float]]:
        inside = [s for s in samples if lo * planned <= s["recorded"] < hi * planned
                  and (not full or s["in_flight"] >= 0.9 * concurrency)]
        if inside or not samples:
            return inside
        return [min(samples, key=lambda s: abs(s["recorded"] - lo * planned))]

    warm, end = window(0.10, 0.20, False), window(0.90, 1.0, True)
    if not warm or not end:
        return {"warm": None, "end": None, "growth": None, "samples": [len(warm), len(end)], "between": None}
    shown = [m for m in (*METRICS, *SHOWN) if all(m in s for s in warm + end)]
    at_warm = {m: statistics.median(s[m] for s in warm) for m in shown}
    at_end = {m: statistics.median(s[m] for s in end) for m in shown}
    between = None
    if processes is not None:
        per_warm, per_end = _per_process(warm, processes), _per_process(end, processes)
        kept = per_warm.keys() & per_end.keys()
        for at, per in ((at_warm, per_warm), (at_end, per_end)):
            at["rss_kept_mib"] = sum(per[pid][0] for pid in kept)
            at["files_kept"] = sum(per[pid][1] for pid in kept)
        between = {"kept": len(kept), "started": len(per_end.keys() - kept), "ended": len(per_warm.keys() - kept)}
    growth = {m: round(at_end[m] / at_warm[m] - 1, 4) if at_warm[m] else None for m in METRICS if m in at_warm}
    return {"warm": {m: round(v, 1) for m, v in at_warm.items()}, "end": {m: round(v, 1) for m, v in at_end.items()},
            "growth": growth, "samples": [len(warm), len(end)], "between": between}


def _per_process(window: list[dict[str, float]],
                 processes: dict[float, dict[int, tuple[float, int]]]) -> dict[int, tuple[float, float]]:
    """Each process seen in `window`'s samples: its median RSS and open files over the samples that saw it."""
    seen: dict[int, list[tuple[float, int]]] = {}
    for s in window:
        for pid, figures in processes.get(s["t"], {}).items():
            seen.setdefault(pid, []).append(figures)
    return {pid: (statistics.median(r for r, _ in got), statistics.median(f for _, f in got))
            for pid, got in seen.items()}


def count_records(path: Path) -> int:
    """Episodes recorded: the lines of episodes.jsonl (0 when there is none)."""
    if not path.is_file():
        return 0
    with path.open("rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from awm_runtime import RunConfig
    from awm_runtime._log import console_logging
    from awm_runtime.scheduler import RunProgress, prepare, raise_open_files, revise
    from awm_runtime.scheduler import run as run_episodes

    console_logging()  # stdout carries the JSON result
    if (low := raise_open_files(args.concurrency)) is not None:
        print(f"awm-bench: {low}", flush=True, file=sys.stderr)
    out = args.out or Path(tempfile.mkdtemp(prefix="awm-bench-long-")) / "run"
    load_before = os.getloadavg()
    config = RunConfig(policy="sim/oracle", expert="none", scenarios=args.scenarios, concurrency=args.concurrency,
                       repeats=1, shards=1, preflight="off", grace_s=5, out=out)
    prep = await prepare(config)
    prep = await revise(prep, repeats=max(1, math.ceil(args.episodes / len(prep.tasks))))
    progress = RunProgress()
    samples = Samples(prep.planned)
    started = time.perf_counter()
    snapshots = Snapshots()

    async def sample() -> None:
        while True:
            seen = await asyncio.to_thread(snapshots.take)
            kinds, per_process = seen.pop("files_by_kind"), seen.pop("per_process")
            samples.add({"t": round(time.perf_counter() - started, 2), "recorded": progress.recorded,
                         "in_flight": progress.in_flight, **seen}, kinds, per_process)
            await asyncio.sleep(args.every)

    sampler = asyncio.create_task(sample())
    try:
        ran = await run_episodes(prep, progress=progress)
    finally:
        sampler.cancel()
    wall = time.perf_counter() - started
    result = report(args, prep.planned, count_records(out / "episodes.jsonl"), ran.summary, samples.rows(), wall,
                    load_before, out, peak=samples.peak, processes=samples.processes())
    result["samples_taken"] = len(samples)
    result["steady_malloc"] = applied()  # the pool fixed glibc's mmap threshold (awm_runtime/_malloc.py)
    spread = samples.thinned()  # over the whole run (the rows are mostly the two windows')
    result["progress"] = progress_rows([s for s, _ in spread])
    result["files_by_kind"] = [[s["t"], k] for s, k in thin(spread, 20)]
    return result


def progress_rows(samples: list[dict[str, float]]) -> list[list[Any]]:
    """At most ~50 of `samples` as [t, recorded, RSS of the runtime, RSS summed, open files summed, threads summed,
    verifier forks, long-lived processes]: where a growth starts, whether it levels off, and whether a step in the
    sums is a process more."""
    return [[s["t"], s["recorded"], round(s["rss_runtime_mib"], 2), round(s["rss_all_mib"], 1), s["files_all"],
             s.get("threads_all"), s.get("forks"), s.get("processes")] for s in thin(samples, 50)]


def report(args: argparse.Namespace, planned: int, recorded: int, summary: dict[str, Any],
           samples: list[dict[str, float]], wall_s: float, load_before: tuple[float, float, float],
           out: Path, peak: dict[str, float] | None = None,
           processes: dict[float, dict[int, tuple[float, int]]] | None = None) -> dict[str, Any]:
    """The JSON result and its table. `peak`: each sampled metric's maximum over the run (default: over `samples`);
    `processes`: each window sample's long-lived processes (`flatness`), without which the sums over the processes
    that live through both windows are unknown and the run is not called flat."""
    flat = flatness(samples, planned, args.concurrency, processes)
    lost = planned - recorded
    growth = flat["growth"] or {}
    met = {"flat": set(growth) == set(METRICS) and all(g is not None and g <= TARGET_GROWTH for g in growth.values()),
           "none_lost": lost == 0}
    early = 0.10 * planned < WARM_PER_SLOT * args.concurrency  # the warm window lies in the warm-up
    outcomes = summary["arms"]["main"]["outcomes"] if summary.get("arms") else {}
    sampled = [m for m in (*METRICS, *SHOWN) if m in FIELDS]  # the kept sums are per window, not per sample
    peak = {m: (peak or {}).get(m, max((s[m] for s in samples if m in s), default=0)) for m in sampled}
    result = {
        "suite": "long", "planned": planned, "recorded": recorded, "lost": lost, "outcomes": outcomes,
        "concurrency": args.concurrency, "wall_s": round(wall_s, 1), "episodes_per_s": round(recorded / wall_s, 2)
        if wall_s else 0.0, "loop_lag_p99_ms": summary.get("loop_lag_ms", {}).get("p99_ms"),
        "warm": flat["warm"], "end": flat["end"], "growth": flat["growth"], "window_samples": flat["samples"],
        "processes_between_windows": flat["between"],
        "peak": {m: round(v, 1) for m, v in peak.items()}, "open_files_limit": open_files_limit(),
        "targets": {"growth": TARGET_GROWTH, "lost": 0}, "met": met, "warm_window_in_warm_up": early,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(), "run_dir": str(out),
        "progress": progress_rows(samples),
    }
    mark = {True: "met", False: "NOT met"}

    def row(label: str, metric: str, unit: str) -> list[str]:
        if flat["warm"] is None or metric not in flat["warm"]:
            return [label, "unknown: no sample in a window" if flat["warm"] is None else "unknown",
                    f"<= +{TARGET_GROWTH:.0%}"]
        g = growth[metric]
        return [label, f"{flat['warm'][metric]:,.1f} -> {flat['end'][metric]:,.1f} {unit} "
                       f"({'unknown' if g is None else f'{g:+.1%}'})", f"<= +{TARGET_GROWTH:.0%}"]

    def shown(metric: str) -> str:  # warm -> end (peak), not judged
        if flat["warm"] is None or metric not in flat["warm"]:
            return "unknown"
        return f"{flat['warm'][metric]:,.0f} -> {flat['end'][metric]:,.0f} (peak {peak.get(metric, 0):,.0f})"

    between = flat["between"]
    lived = ("unknown" if between is None else
             f"{between['kept']} through both windows; {between['started']} started, {between['ended']} ended between")
    pool = "not judged: a scenario's pool starts a world worker when calls queue on one (bounded by its size)"
    result["table"] = [
        ["episodes recorded of planned", f"{recorded:,} of {planned:,}: {lost:,} lost",
         f"0 lost: {mark[met['none_lost']]}"],
        row("RSS, runtime process: warm -> end", "rss_runtime_mib", "MiB"),
        row("RSS, summed over the long-lived processes through both windows", "rss_kept_mib", "MiB"),
        ["RSS, summed over every long-lived process", shown("rss_all_mib"), pool],
        ["long-lived processes", f"{shown('processes')}: {lived}", pool],
        row("open files, runtime process, less its pipes to them", "files_runtime_own", ""),
        ["open files, runtime process", shown("files_runtime"), "not judged: 3 pipes a world worker"],
        row("open files, summed over the long-lived processes through both windows", "files_kept", ""),
        ["open files, summed over every long-lived process", shown("files_all"), pool],
        ["threads, summed over the long-lived processes", shown("threads_all"),
         "not judged: a world worker's call thread holds 3 files, its threads follow its waiting calls"],
        ["verifier forks alive | their open files", f"{shown('forks')} | {shown('files_forks')}",
         "not judged: a fork a verification, as many as verifications in flight"],
        ["flat", mark[met["flat"]], f"warm window inside the warm-up: run >= {10 * WARM_PER_SLOT} x --concurrency "
                                    "episodes" if early else ""],
        ["wall | episodes/s", f"{wall_s:.1f} s | {result['episodes_per_s']}", ""],
        ["load average before -> after", f"{load_before[0]:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
                                         "cores", "quiet machine"],
    ]
    return result


__all__ = ["Snapshots", "add_arguments", "count_records", "flatness", "progress_rows", "report", "run"]
