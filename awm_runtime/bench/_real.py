"""Real: episodes against a real inference server (by default SmolLM2-135M on llama.cpp, `local/smollm2`).

Runs real episodes end to end (the server awm-run starts, the chat policy, a world, verifiers) and
reports episodes per minute, tokens per second, and where the time went: the runtime's share of each
episode's wall time (what is not spent waiting on the model, the world or the verifier), and the CPU
seconds of the runtime, the world engine and the model server. Needs the [local] extra (or an alias
whose server is already running: --policy ALIAS --config awm.toml).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

DEFAULT_WORLDS = "examples/tiny_world"
WAIT_KEYS = ("policy_s", "world_s", "verify_s", "expert_s")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", default="local/smollm2", metavar="ALIAS", help="policy alias (default local/smollm2)")
    p.add_argument("--config", type=Path, default=None, metavar="awm.toml", help="model aliases")
    p.add_argument("--worlds", default=DEFAULT_WORLDS, metavar="DIR",
                   help=f"worlds whose prompts fit the model (default {DEFAULT_WORLDS}, 4 tools)")
    p.add_argument("--episodes", type=int, default=6, metavar="N",
                   help="at least N episodes: whole repeats of the world's tasks (default 6)")
    p.add_argument("--concurrency", type=int, default=None, metavar="N",
                   help="episodes in flight (default: the alias's max_concurrency)")
    p.add_argument("--protocol", choices=("native", "awm", "hermes"), default=None,
                   help="tool-call protocol (default: the alias's)")
    p.add_argument("--max-turns", type=int, default=8, metavar="N", help="policy replies per episode (default 8)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR", help="keep the run directory here")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from awm_runtime import RunConfig
    from awm_runtime.models import local_servers
    from awm_runtime.scheduler import cpu_s, prepare, revise
    from awm_runtime.scheduler import run as run_episodes

    out = args.out or Path(tempfile.mkdtemp(prefix="awm-bench-real-")) / "run"
    config = RunConfig(policy=args.policy, expert="none", worlds=args.worlds, config_path=args.config,
                       protocol=args.protocol, max_turns=args.max_turns, concurrency=args.concurrency or 1,
                       repeats=1, shards=1, out=out, preflight="quick", grace_s=5)
    setup = time.perf_counter()
    prep = await prepare(config)  # starts the local server, waits for /health, runs the preflight
    setup_s = time.perf_counter() - setup
    client = prep.harnesses["main"].policy.client  # type: ignore[attr-defined]
    concurrency = args.concurrency or client.config.max_concurrency
    repeats = max(1, math.ceil(args.episodes / len(prep.tasks)))
    prep = await revise(prep, repeats=repeats, concurrency=concurrency)
    server = local_servers().get(client.config.alias)
    cpu0 = {"self": cpu_s(), "server": server.cpu_s() if server else 0.0}
    started = time.perf_counter()
    await run_episodes(prep)  # stops the local server at the end
    wall = time.perf_counter() - started
    cpu = {"runtime": cpu_s() - cpu0["self"], "server": server.cpu_s() - cpu0["server"] if server else None}
    return _report(args, out, wall, setup_s, cpu, concurrency, client.config)


def time_shares(records: list[dict[str, Any]]) -> dict[str, float]:
    """Of all episodes' wall time: the share spent waiting on each of model, world, verifier, expert, and
    the rest (the runtime's own: the loop, parsing, prompt rendering, records)."""
    wall = sum(r["timings"].get("wall_s", 0.0) for r in records)
    if wall <= 0:
        return {}
    shares = {k.removesuffix("_s"): sum(r["timings"].get(k, 0.0) for r in records) / wall for k in WAIT_KEYS}
    shares["runtime"] = max(0.0, 1.0 - sum(shares.values()))
    return shares


def _report(args: argparse.Namespace, out: Path, wall: float, setup_s: float, cpu: dict[str, Any],
            concurrency: int, cfg: Any) -> dict[str, Any]:
    records = [orjson.loads(line) for line in (out / "episodes.jsonl").read_bytes().splitlines() if line.strip()]
    n = len(records)
    completion = sum(r["usage"].get("policy", {}).get("completion_tokens", 0) for r in records)
    prompt = sum(r["usage"].get("policy", {}).get("prompt_tokens", 0) for r in records)
    calls = sum(r["usage"].get("policy", {}).get("calls", 0) for r in records)
    shares = time_shares(records)
    outcomes: dict[str, int] = {}
    for r in records:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    kinds: dict[str, int] = {}
    for r in records:
        for kind, count in r["format_errors"].items():
            kinds[kind] = kinds.get(kind, 0) + count
    latency = [r["timings"]["policy_s"] / max(1, r["usage"]["policy"]["calls"]) for r in records
               if r["usage"].get("policy", {}).get("calls")]
    result = {
        "policy": cfg.alias, "model": cfg.model, "protocol": records[0]["policy"].get("protocol") if records else None,
        "worlds": args.worlds, "episodes": n, "concurrency": concurrency, "wall_s": round(wall, 2),
        "setup_s": round(setup_s, 2),
        "episodes_per_min": round(n / wall * 60, 2) if wall else 0.0,
        "completion_tokens_per_s": round(completion / wall, 1) if wall else 0.0,
        "prompt_tokens_per_s": round(prompt / wall, 1) if wall else 0.0,
        "model_calls": calls, "mean_call_latency_s": round(statistics.fmean(latency), 3) if latency else None,
        "time_share": {k: round(v, 4) for k, v in shares.items()},
        "cpu_s": {"runtime": round(cpu["runtime"], 2),
                  "model_server": round(cpu["server"], 2) if cpu["server"] is not None else None},
        "outcomes": outcomes, "format_errors": kinds, "infra_errors": outcomes.get("error", 0),
        "load_average": os.getloadavg(), "cpus": os.cpu_count(), "run_dir": str(out),
    }
    server_cpu = f"{cpu['server']:.1f}" if cpu["server"] is not None else "n/a"
    result["table"] = [
        ["episodes/minute", f"{result['episodes_per_min']:.1f} ({n} episodes, {concurrency} in flight)", ""],
        ["completion tokens/s",
         f"{result['completion_tokens_per_s']:.1f} (prompt {result['prompt_tokens_per_s']:.0f})", ""],
        ["runtime's share of episode wall time", f"{shares.get('runtime', 0.0):.3%}", "small"],
        ["setup (server start, preflight)", f"{setup_s:.1f} s", ""],
        ["waiting on model | world | verifier",
         " | ".join(f"{shares.get(k, 0.0):.1%}" for k in ("policy", "world", "verify")), ""],
        ["CPU s runtime | model server", f"{cpu['runtime']:.1f} | {server_cpu}", ""],
        ["outcomes", ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())), "0 error"],
        ["load average", " ".join(f"{x:.1f}" for x in os.getloadavg()), "quiet machine"],
    ]
    return result
