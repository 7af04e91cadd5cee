"""AWM-1K scale: the oracle sweep over a 1,000-scenario set built from the built-in worlds.

Every task of every scenario runs once, through the real runtime: `prepare` (dataset load, task
selection, the scenario-grouped plan), the episode pool, the chat policy on the simulated oracle,
world workers (each scenario built and imported, then evicted), and code-mode verifiers. It reports
wall time, episodes per second, scenario imports, and the peak memory summed over the run's
distinct processes, with the machine's load, so a figure can be read against the target:
10,000 tasks over 1,000 scenarios in <= 6 minutes within 1.5 GiB, every task complete.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_WALL_S = 360.0
TARGET_MEMORY_MIB = 1536.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenarios", type=int, default=1000, metavar="N", help="scenarios in the set (default 1000)")
    p.add_argument("--concurrency", type=int, default=64, metavar="N", help="episodes in flight (default 64)")
    p.add_argument("--world-workers", type=int, default=0, metavar="N",
                   help="world worker processes (default: the runtime's, one per core, 2 to 8)")
    p.add_argument("--model-path", choices=("direct", "litellm"), default="direct",
                   help="how the simulated oracle is reached: direct = in the runtime's process, without litellm, "
                        "as awm-run's sim/ aliases are (default); litellm = through litellm's custom provider, as an "
                        "alias with transport = \"litellm\" is")
    p.add_argument("--data", type=Path, default=None, metavar="DIR",
                   help="build the set here and keep it (reused when it is already there); default: a temp dir")
    p.add_argument("--out", type=Path, default=None, metavar="DIR", help="keep the run directory here")


def _ensure_set(args: argparse.Namespace, tmp: Path) -> tuple[Path, dict[str, Any], float]:
    from awm_runtime.bench._awm1k_data import write_awm1k_set
    from awm_runtime.worlds import BUILTIN_DATA

    data = args.data or tmp / "awm1k"
    marker = data / f".awm1k-{args.scenarios}"
    started = time.perf_counter()
    if marker.is_file():
        info = {"scenarios": args.scenarios, "dir": str(data), "reused": True,
                "jsonl_bytes": sum(p.stat().st_size for p in data.glob("gen_*.jsonl"))}
    else:
        if data.exists():
            shutil.rmtree(data)
        info = write_awm1k_set(BUILTIN_DATA, data, args.scenarios)
        marker.touch()
    return data, info, time.perf_counter() - started


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from awm_runtime import RunConfig
    from awm_runtime._log import console_logging
    from awm_runtime.bench._procs import ProcessSampler
    from awm_runtime.scheduler import RunProgress, prepare
    from awm_runtime.scheduler import run as run_episodes
    from awm_runtime.worlds import AwmWorld

    console_logging()  # stdout carries the JSON result
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="awm-bench-awm1k-") as tmp_name:
        tmp = Path(tmp_name)
        data, info, build_s = _ensure_set(args, tmp)
        config = RunConfig(worlds=str(data), policy="sim/oracle", expert="none", concurrency=args.concurrency,
                           repeats=1, shards=1, world_workers=args.world_workers, preflight="off", grace_s=5,
                           out=args.out or tmp / "run")
        sampler = ProcessSampler()
        cpu0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        prep = await prepare(config)
        world = prep.world
        assert isinstance(world, AwmWorld)  # a directory: the local engine
        if args.model_path == "litellm":  # the old path of awm-run's sim/ aliases, for comparison
            from awm_runtime.models import IN_PROCESS

            for client in prep.ctx.clients.values():
                if client.config.simulated:
                    client._transport = IN_PROCESS
        prepare_s = time.perf_counter() - started
        progress = RunProgress()
        samples: list[tuple[float, int, float, float, int]] = []

        async def sample() -> None:
            while True:
                rss, pss, n = await asyncio.to_thread(sampler.sample)
                samples.append((time.perf_counter() - started, progress.recorded, rss, pss, n))
                await asyncio.sleep(0.5)

        task = asyncio.create_task(sample())
        try:
            result = await run_episodes(prep, progress=progress)
        finally:
            task.cancel()
        total_s = time.perf_counter() - started
        cpu1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        residency = world.residency()
    return _report(args, info, build_s, prepare_s, total_s, result.summary, residency, sampler, samples,
                   (cpu0, cpu1), load_before, world.pool.replicas)


def _cpu(pair: tuple[Any, Any], which: int) -> float:
    before, after = pair[0][which], pair[1][which]
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def _report(args: argparse.Namespace, info: dict[str, Any], build_s: float, prepare_s: float, total_s: float,
            summary: dict[str, Any], residency: dict[str, int], sampler: Any,
            samples: list[tuple[float, int, float, float, int]], cpu: tuple[Any, Any],
            load_before: tuple[float, float, float], workers: int) -> dict[str, Any]:
    outcomes = summary["arms"]["main"]["outcomes"] if summary.get("arms") else {}
    episodes = summary.get("recorded", 0)
    complete = outcomes.get("complete", 0)
    wall = summary.get("wall_s", 0.0)
    rate = episodes / wall if wall else 0.0
    runtime_cpu, children_cpu = _cpu(cpu, 0), _cpu(cpu, 1)
    by_kind = sampler.cpu_by_kind()
    tasks = args.scenarios * 10
    peak_rss, peak_pss = sampler.peak_rss_mib, sampler.peak_pss_mib
    load_after = os.getloadavg()
    met = {"all_complete": complete == tasks == episodes, "wall": total_s <= TARGET_WALL_S,
           # PSS: each page's share among the processes that map it. Summing RSS counts the world zygote's
           # pages once per forked worker (2,046 MiB of RSS against 1,151 MiB of PSS at 17 workers).
           "memory": peak_pss <= TARGET_MEMORY_MIB}
    result = {
        "suite": "awm1k", "scenarios": args.scenarios, "tasks": tasks, "episodes": episodes,
        "outcomes": outcomes, "complete": complete, "concurrency": args.concurrency,
        "world_workers_per_scenario": workers, "world_workers_started": residency["workers_started"],
        "model_path": args.model_path, "set": info, "set_build_s": round(build_s, 1),
        "prepare_s": round(prepare_s, 2), "run_wall_s": wall, "total_wall_s": round(total_s, 1),
        "episodes_per_s": round(rate, 2),
        "scenario_builds": residency["builds"], "scenario_imports": residency["imports"],
        "scenario_evictions": residency["evictions"], "imports_per_scenario": round(residency["imports"]
                                                                                   / max(args.scenarios, 1), 3),
        "peak_memory_mib": {"rss_sum": round(peak_rss, 1), "pss_sum": round(peak_pss, 1),
                            "processes_at_peak": sampler.peak_processes,
                            "pss_by_kind_at_peak": {k: round(v, 1) for k, v in sampler.peak_by_kind.items()}},
        "processes_seen": sampler.processes_by_kind(),
        "cpu_s": {"runtime": round(runtime_cpu, 1), "children_reaped": round(children_cpu, 1),
                  "by_kind_sampled": {k: round(v, 1) for k, v in by_kind.items()}},
        "cpu_s_per_episode": round((runtime_cpu + children_cpu) / max(episodes, 1), 4),
        "targets": {"wall_s": TARGET_WALL_S, "memory_mib": TARGET_MEMORY_MIB, "tasks": tasks}, "met": met,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after], "cpus": os.cpu_count(),
        "python": platform.python_version(), "command": " ".join(["awm-bench", *sys.argv[2:]]),
        "progress": [[round(t, 1), done, round(rss, 1), round(pss, 1), n] for t, done, rss, pss, n in samples[::20]],
    }
    mark = {True: "met", False: "NOT met"}
    result["table"] = [
        ["tasks (scenarios x 10)", f"{episodes:,} run, {complete:,} complete", f"{tasks:,} complete"],
        ["wall time (prepare + run)", f"{total_s:.1f} s (prepare {prepare_s:.1f} s)",
         f"<= {TARGET_WALL_S:.0f} s: {mark[met['wall']]}"],
        ["episodes per second", f"{rate:.1f}", ""],
        ["scenario imports", f"{residency['imports']:,} ({residency['builds']:,} builds, "
                             f"{residency['evictions']:,} evictions)", f"~{args.scenarios:,}"],
        ["peak memory, sum over processes", f"PSS {peak_pss:,.0f} MiB (RSS {peak_rss:,.0f} MiB) "
                                           f"({sampler.peak_processes} processes)",
         f"<= {TARGET_MEMORY_MIB:,.0f} MiB: {mark[met['memory']]}"],
        ["CPU s: runtime | world+verifier", f"{runtime_cpu:.0f} | {children_cpu:.0f}", ""],
        ["load average before -> after", f"{load_before[0]:.1f} -> {load_after[0]:.1f} on {os.cpu_count()} cores",
         "quiet machine"],
    ]
    return result


__all__ = ["add_arguments", "run"]
