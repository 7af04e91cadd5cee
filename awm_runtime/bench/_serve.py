"""serve: a burst of concurrent OpenEnv sessions against a real awm-serve process, and what idle sessions cost.

Starts `awm-serve` as a subprocess (as a user would), then opens `--sessions` WebSockets at once, each doing
reset, list_tools, one tool call and close, and reports reset latency over the socket, failures and wall
time. Then it holds `--idle` sessions after their reset and reports the server's memory per idle session.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from awm_runtime.isolation import kill_process, signal_process

IDLE_RAMP = 250
OPENENV = {"reset_p50_ms": 1700.0, "burst_lost": "all of 192", "per_session_mib": 68.0}  # OPENENV.md, BRIEF §1


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sessions", type=int, default=1000, help="concurrent sessions in the burst (default 1000)")
    p.add_argument("--idle", type=int, default=2000, help="idle sessions held after reset (default 2000)")
    p.add_argument("--resets", type=int, default=300, help="sequential resets on one socket (default 300)")
    p.add_argument("--worlds", default="builtin", help="worlds awm-serve serves (default builtin)")
    p.add_argument("--world-workers", type=int, default=0, help="awm-serve's world workers (default: per core)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds before the bench gives up (default 600)")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2) if ordered else float("nan")


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


def _episode_files(pid: int) -> int:
    """Bytes of episode DBs the server holds (its world workdir is named after its pid)."""
    total = 0
    for base in (Path("/dev/shm"), Path(os.environ.get("TMPDIR", "/tmp"))):
        for workdir in base.glob(f"awm-world-{pid}-*"):
            total += sum(p.stat().st_blocks * 512 for p in workdir.glob("*/episodes/ep-*.db*"))
    return total


async def _start(args: argparse.Namespace) -> tuple[asyncio.subprocess.Process, str]:
    """awm-serve as a user starts it; it prints its URL on stdout when it listens."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "from awm_runtime.cli import serve_main; raise SystemExit(serve_main())",
        "--worlds", args.worlds, "--port", "0", "--preload", "--world-workers", str(args.world_workers),
        "--max-sessions", str(max(args.sessions, args.idle) + 10), "--max-lifetime", str(args.timeout),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    assert proc.stdout is not None
    url = (await asyncio.wait_for(proc.stdout.readline(), 120)).decode()
    if not url.startswith("http"):
        kill_process(proc)
        raise RuntimeError(f"awm-serve did not start (exit {await proc.wait()})")
    return proc, url.strip().replace("http", "ws", 1) + "/ws"


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        signal_process(proc, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 15)
        except TimeoutError:
            kill_process(proc)
            await proc.wait()


async def _request(ws: Any, frame: dict[str, Any]) -> dict[str, Any]:
    await ws.send(json.dumps(frame))
    reply: dict[str, Any] = json.loads(await ws.recv())
    if reply.get("type") == "error":
        raise RuntimeError(f"{reply['data'].get('code')}: {reply['data'].get('message')}")
    return reply


async def _session(url: str, scenario: str, idx: int, call: tuple[str, dict[str, Any]],
                   hold: asyncio.Event | None = None, ready: asyncio.Queue[bool] | None = None) -> float:
    from websockets.asyncio.client import connect

    # The server pings; a client of thousands of sockets in one process need not ping too.
    async with connect(url, open_timeout=60, max_size=None, close_timeout=10, ping_interval=None) as ws:
        started = time.perf_counter()
        reset = await _request(ws, {"type": "reset", "data": {"scenario": scenario, "task_idx": idx}})
        reset_ms = (time.perf_counter() - started) * 1000
        if reset["data"]["observation"].get("reward_type") != "reset_ok":
            raise RuntimeError(f"reset: {reset['data']['observation']}")
        if hold is not None and ready is not None:  # an idle session: reset, then nothing
            ready.put_nowait(True)
            await hold.wait()
        else:
            listing = await _request(ws, {"type": "step", "data": {"type": "list_tools"}})
            if not listing["data"]["observation"]["tools"]:
                raise RuntimeError("no tools")
            result = await _request(ws, {"type": "step", "data": {"type": "call_tool", "tool_name": call[0],
                                                                  "arguments": call[1]}})
            if result["data"]["observation"].get("reward_type") != "tool_call_ok":
                raise RuntimeError(f"call: {result['data']['observation']}")
        await ws.send('{"type":"close"}')
    return reset_ms


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from awm_runtime.worlds import load_local_worlds

    world = load_local_worlds(args.worlds)
    jobs = [(t.scenario, t.task_idx, sol.steps[0]) for t in world.tasks() if (sol := world.solution(t)) and sol.steps]
    if not jobs:
        raise RuntimeError(f"{args.worlds}: no task with a reference solution to call")
    proc, url = await _start(args)
    try:
        base_rss = _rss_kib(proc.pid)
        # Warm-up: a small burst loads every scenario into every world worker (the pool spreads a busy
        # scenario over workers, and each pays an import the first time), so the burst below measures serving.
        await asyncio.gather(*(_session(url, *jobs[i % len(jobs)]) for i in range(min(args.sessions, 120))))
        sequential = await _sequential(url, jobs, args.resets)
        started = time.perf_counter()
        outcomes = await asyncio.gather(*(_session(url, *jobs[i % len(jobs)]) for i in range(args.sessions)),
                                        return_exceptions=True)
        burst_s = time.perf_counter() - started
        server_side = (await asyncio.to_thread(_stats, url)).get("reset_ms", {})
        resets = [o for o in outcomes if isinstance(o, float)]
        failures = [f"{type(o).__name__}: {o}" for o in outcomes if not isinstance(o, float)]
        idle = await _idle(url, jobs, args.idle, proc.pid, base_rss)
    finally:
        await _stop(proc)
    return _report(args, sequential, resets, failures, burst_s, idle, server_side)


async def _sequential(url: str, jobs: list[Any], n: int) -> list[float]:
    """Reset after reset on one socket: the reset path over the wire without a queue in front of it."""
    from websockets.asyncio.client import connect

    out = []
    async with connect(url, open_timeout=60, max_size=None) as ws:
        for i in range(n):
            scenario, idx, _ = jobs[i % len(jobs)]
            started = time.perf_counter()
            reply = await _request(ws, {"type": "reset", "data": {"scenario": scenario, "task_idx": idx}})
            out.append((time.perf_counter() - started) * 1000)
            if reply["data"]["observation"].get("reward_type") != "reset_ok":
                raise RuntimeError(f"reset: {reply['data']['observation']}")
        await ws.send('{"type":"close"}')
    return out


async def _idle(url: str, jobs: list[Any], n: int, pid: int, base_rss: int) -> dict[str, Any]:
    """Hold `n` sessions after their reset, measure the server, then close them all."""
    if n <= 0:
        return {}
    hold, ready = asyncio.Event(), asyncio.Queue[bool]()
    tasks = []
    for i in range(n):
        scenario, idx, call = jobs[i % len(jobs)]
        task = asyncio.create_task(_session(url, scenario, idx, call, hold=hold, ready=ready))
        task.add_done_callback(lambda t: ready.put_nowait(False))  # a session that ended before holding
        tasks.append(task)
        if len(tasks) % IDLE_RAMP == 0:  # open them in waves: the client is one process on a shared machine
            for _ in range(IDLE_RAMP):
                await ready.get()
    for _ in range(n % IDLE_RAMP):
        await ready.get()
    await asyncio.sleep(1.0)  # let the server settle (freed buffers, GC) before measuring
    rss, files = _rss_kib(pid), _episode_files(pid)
    hold.set()
    done = await asyncio.gather(*tasks, return_exceptions=True)
    errors = [f"{type(d).__name__}: {d}" for d in done if not isinstance(d, float)]
    return {"sessions": n, "failed": len(errors), "errors": sorted(set(errors))[:5],
            "server_rss_growth_kib": rss - base_rss, "episode_files_kib": files // 1024,
            "per_session_kib": round(((rss - base_rss) + files / 1024) / max(1, n), 1)}


def _stats(ws_url: str) -> dict[str, Any]:
    """The server's `/stats` (its own reset times among them)."""
    import urllib.request

    base = ws_url.replace("ws", "http", 1).removesuffix("/ws")
    with urllib.request.urlopen(f"{base}/stats", timeout=30) as reply:
        return dict(json.loads(reply.read()))


def _report(args: argparse.Namespace, sequential: list[float], resets: list[float], failures: list[str],
            burst_s: float, idle: dict[str, Any], server_side: dict[str, Any]) -> dict[str, Any]:
    load = os.getloadavg()
    reset = {"p50": _pct(resets, 0.5), "p95": _pct(resets, 0.95), "max": round(max(resets, default=0.0), 1)}
    alone = {"p50": _pct(sequential, 0.5), "p95": _pct(sequential, 0.95), "n": len(sequential)}
    table = [
        [f"reset over the socket, one at a time ({alone['n']})", f"{alone['p50']:.2f} / {alone['p95']:.2f} ms",
         "p50 / p95"],
        [f"burst of {args.sessions} sessions (reset, list_tools, call, close)",
         f"{len(resets)} ok, {len(failures)} failed in {burst_s:.1f} s", "no failure"],
        ["reset over the socket p50 / p95 (in the burst)", f"{reset['p50']:.1f} / {reset['p95']:.1f} ms", ""],
        ["  of which the server's own work p50 / p95", f"{server_side.get('p50', '-')} / {server_side.get('p95', '-')} "
         "ms", "the rest is queueing"],
        [f"idle sessions held ({idle.get('sessions', 0)})",
         f"{idle.get('per_session_kib', '-')} KiB each ({idle.get('failed', 0)} failed)", ""],
        ["OpenEnv's AWM server (OPENENV.md)", f"reset p50 {OPENENV['reset_p50_ms']:.0f} ms, a burst of 192 "
         f"lost every session, {OPENENV['per_session_mib']:.0f} MiB/session", ""],
        ["load average (1 min)", f"{load[0]:.2f} on {os.cpu_count()} cores (client and server share them)", ""],
    ]
    return {"suite": "serve", "sessions": args.sessions, "ok": len(resets), "failed": len(failures),
            "failures": failures[:10], "burst_s": round(burst_s, 2), "reset_ms": reset, "reset_alone_ms": alone,
            "server_reset_ms": server_side, "idle": idle,
            "cpu_count": os.cpu_count(), "load_avg": [round(x, 2) for x in load], "openenv": OPENENV,
            "table": table}


__all__ = ["add_arguments", "run"]
