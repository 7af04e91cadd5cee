"""`awm-bench scale --ray`: the same load in one process, then on a Ray cluster started on loopback.

Both runs are the full stack against the loopback model server (which binds 127.0.0.1, so the
cluster's nodes run on this machine). Efficiency is steady episodes/s over the latency-bound
ideal in each; their ratio is what running on Ray costs at that load. Per node it reports what
Ray's own processes cost: the raylet and what it started (agents, idle workers, the limits actor),
less the episode actors and their world processes; the head's GCS and monitor are not counted.
On one machine the nodes share its cores, so this measures overhead, not the gain of more machines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any


async def compare(args: argparse.Namespace, full_stack: Callable[..., Awaitable[Any]],
                  _report: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """`full_stack` and `_report` are _scale.py's (passed in: this module does not import it back)."""
    from awm_runtime.testing import LoopbackRayCluster

    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="awm-bench-scale-ray-"))
    one_out, ray_out = root / "one-process", root / "ray"
    one_args = argparse.Namespace(**{**vars(args), "shards": 1})
    summary, samples, base_rss, cpu, repeats = await full_stack(one_args, one_out, shards=1)
    one = _report(one_args, summary, one_out, samples, base_rss, repeats, cpu)

    cluster = LoopbackRayCluster(workers=max(0, args.ray_nodes - 1), cpus=args.ray_cpus,
                                 node_env={"AWM_BENCH_KEY": "bench-key"})
    started = time.monotonic()
    await asyncio.to_thread(cluster.start)
    cluster_start_s = time.monotonic() - started
    ray_env = {k: v for k, v in cluster.client_env({}).items()}
    saved = {k: os.environ.get(k) for k in ray_env}
    os.environ.update(ray_env)
    try:
        summary, samples, base_rss, cpu, repeats = await full_stack(args, ray_out, ray=cluster.address)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        await asyncio.to_thread(cluster.stop)
    ray = _report(args, summary, ray_out, samples, base_rss, repeats, cpu)
    return _compare(one, ray, summary, cpu, ray_out, cluster_start_s, _steady_cpu(samples, ray["steady_window_s"]))


def _steady_cpu(samples: list[dict[str, float]], window: list[float]) -> float:
    """The driver's CPU seconds per episode while the run held its load (start-up and drain left out)."""
    inside = [s for s in samples if window[0] <= s["t"] <= window[1]]
    if len(inside) < 2 or inside[-1]["finished"] <= inside[0]["finished"]:
        return 0.0
    return (inside[-1]["cpu"] - inside[0]["cpu"]) / (inside[-1]["finished"] - inside[0]["finished"])


def _compare(one: dict[str, Any], ray: dict[str, Any], summary: dict[str, Any], cpu: dict[str, float], out: Path,
             cluster_start_s: float, driver_steady: float) -> dict[str, Any]:
    actors = summary.get("ray", {}).get("actors", [])
    episodes = max(1, ray["episodes"])
    nodes: dict[str, dict[str, Any]] = {}
    for a in actors:
        node = nodes.setdefault(a["node"], {"node": a["node"][:12], "actors": 0, "actor_peak_rss_mib": 0.0,
                                            "actor_cpu_s": 0.0, "world_cpu_s": 0.0, "episodes": 0,
                                            **{f"ray_{k}": v for k, v in a.get("ray_node_overhead", {}).items()}})
        node["actors"] += 1
        node["episodes"] += a.get("episodes", 0)
        node["actor_peak_rss_mib"] += a.get("peak_rss_mib", 0.0)
        node["actor_cpu_s"] += a.get("cpu_s", 0.0)
        node["world_cpu_s"] += a.get("world_cpu_s", 0.0)
    for node in nodes.values():
        node["ray_cpu_s_per_episode"] = round(node.get("ray_cpu_s", 0.0) / max(1, node["episodes"]), 4)
    cpu_ep = {"driver": cpu["self"] / episodes,
              "actors": sum(n["actor_cpu_s"] for n in nodes.values()) / episodes,
              "world": sum(n["world_cpu_s"] for n in nodes.values()) / episodes,
              "limits_actor": sum(n.get("ray_limits_cpu_s", 0.0) for n in nodes.values()) / episodes,
              "ray_processes": sum(n.get("ray_cpu_s", 0.0) for n in nodes.values()) / episodes,
              "model_server": cpu["server"] / episodes}
    ratio = ray["efficiency"] / one["efficiency"] if one["efficiency"] else 0.0
    keep = ("episodes", "wall_s", "episodes_per_s", "ideal_episodes_per_s", "efficiency", "loop_lag_p99_ms",
            "cpu_s_per_episode", "run_dir")
    result = {
        "episodes_in_flight": one["episodes_in_flight"], "latency_s": one["latency_s"],
        "one_process": {k: one[k] for k in keep},
        "ray": {**{k: ray[k] for k in keep if k != "cpu_s_per_episode"}, "actors": len(actors), "nodes": len(nodes),
                "cluster_start_s": round(cluster_start_s, 1), "actors_ready_s": _ready_s(out),
                "cpu_s_per_episode": {k: round(v, 4) for k, v in cpu_ep.items()},
                "driver_cpu_s_per_episode_steady": round(driver_steady, 4),
                "per_node": list(nodes.values())},
        "efficiency_vs_one_process": round(ratio, 4),
        "load_average": os.getloadavg(), "cpus": os.cpu_count(),
    }
    result["table"] = [
        ["efficiency, one process", f"{one['efficiency']:.1%}", ""],
        [f"efficiency, Ray ({len(actors)} actors, {len(nodes)} nodes)", f"{ray['efficiency']:.1%}", ""],
        ["Ray against one process", f"{ratio:.1%}", ""],
        ["CPU s/episode driver|actors|world|limits|Ray|server", " | ".join(f"{v:.3f}" for v in cpu_ep.values()),
         ""],
        ["driver CPU s/episode, steady", f"{driver_steady:.4f}", ""],
        *[[f"node {n['node']}: Ray RSS, CPU s/episode", f"{n.get('ray_rss_mib', 0):.0f} MiB, "
           f"{n['ray_cpu_s_per_episode']:.4f}", ""] for n in nodes.values()],
        ["cluster start, actors ready", f"{cluster_start_s:.0f} s, {_ready_s(out):.0f} s", ""],
        ["load average", " ".join(f"{x:.1f}" for x in os.getloadavg()), "quiet machine"],
    ]
    return result


def _ready_s(out: Path) -> float:
    """Seconds from the run's start to every actor ready (placement, imports, worlds, preflight)."""
    stamps: dict[str, datetime] = {}
    try:
        with (out / "events.jsonl").open() as fh:
            for line in fh:
                event = json.loads(line)
                if event["event"] in ("run_started", "ray_started") and event["event"] not in stamps:
                    stamps[event["event"]] = datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00"))
    except (OSError, ValueError, KeyError):
        return 0.0
    if len(stamps) < 2:
        return 0.0
    return round((stamps["ray_started"] - stamps["run_started"]).total_seconds(), 1)
