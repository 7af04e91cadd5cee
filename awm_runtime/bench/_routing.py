"""Model routing: the time our layer adds per call over bare litellm, and throughput at high concurrency.

Both are measured against `python -m awm_runtime.testing` running in another process on loopback.
(1) overhead: sequential calls to a zero-latency server, ModelClient (through litellm) vs
`litellm.acompletion`, alternating call by call so both see the same machine load; the median of
the paired differences. Also our layer alone (limits, retries, accounting) over a null transport,
which machine load hardly disturbs.
(2) throughput: N callers, each calling again as soon as its call returns, against a server that
answers after L seconds. Callers start spread over one latency (staggered arrivals, no lockstep
waves), and the rate comes from Little's law over the measuring window: calls in flight on
average divided by the mean time per call, against the ideal N / L. Every extra millisecond a call
takes shows in proportion: 10% more time per call reads 91% of ideal. (Counting completions in a
window after starting every caller at once, as this suite did before, reads 100% until the extra
time pushes a whole wave out of the window.) The count of calls that ended in the window is
reported too, as a cross-check, with client and server CPU per call.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

Call = Callable[[], Awaitable[Any]]
PROMPT = [{"role": "system", "content": "You are a careful agent. " * 20},
          {"role": "user", "content": "List the open tickets and close the oldest one. " * 4}]
KEY_ENV = "AWM_BENCH_KEY"
KEY = "bench-key-not-secret"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--calls", type=int, default=400, help="sequential calls per side for the overhead (default 400)")
    p.add_argument("--load", action="append", metavar="NxS",
                   help="throughput point: N calls in flight, S seconds server latency (default 256x2 and 1000x5)")
    p.add_argument("--duration", type=float, default=4.0,
                   help="each throughput point measures over this many latencies, after two to start (default 4)")
    p.add_argument("--model-procs", type=int, default=None,
                   help="model-call processes for --litellm (default: as awm-run chooses for this machine)")
    p.add_argument("--bare", action="store_true", help="also measure bare litellm throughput, for comparison")
    p.add_argument("--litellm", action="store_true",
                   help="also measure our client forced through litellm (through --model-procs processes)")
    p.add_argument("--skip-overhead", action="store_true")


class Server:
    """The fake OpenAI server in its own process, so its CPU is not ours; stopped and reaped on exit."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> Server:
        lifetime = str(max(600.0, self.latency_s * 200))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "awm_runtime.testing", "--latency", str(self.latency_s), "--key", KEY,
             "--lifetime", lifetime, "--parent", str(os.getpid())], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            raise RuntimeError("the fake OpenAI server did not start")
        return self

    def cpu_s(self) -> float:
        assert self.proc is not None
        return _proc_cpu_s(self.proc.pid)

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def _proc_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu_s() -> float:
    """CPU of our model-call processes (live children other than the server)."""
    from awm_runtime.models import call_proc_pids

    return sum(_proc_cpu_s(pid) for pid in call_proc_pids())


def _bare(url: str) -> Call:
    from awm_runtime.models._litellm import litellm

    ll = litellm()

    async def call() -> Any:
        return await ll.acompletion(model="openai/fake-model", messages=PROMPT, api_base=url, api_key=KEY,
                                    timeout=120, num_retries=0)
    return call


def _ours(url: str, concurrency: int, transport: str = "auto") -> Call:
    from awm_runtime.models import ModelClient, ModelConfig

    cfg = ModelConfig(alias="bench", model="openai/fake-model", api_base=url, api_key_env=KEY_ENV,
                      max_concurrency=max(concurrency, 1), timeout_s=120, transport=transport)  # type: ignore[arg-type]
    client = ModelClient(cfg, "policy")

    async def call() -> Any:
        return await client.complete(PROMPT)
    return call


async def overhead(calls: int) -> dict[str, Any]:
    from awm_runtime.models import reset_limiters, shutdown

    reset_limiters()
    with Server(0.0) as server:
        sides = {"bare": _bare(server.url), "ours": _ours(server.url, 64, "litellm"), "http": _ours(server.url, 64)}
        times: dict[str, list[float]] = {name: [] for name in sides}
        cpu: dict[str, float] = dict.fromkeys(sides, 0.0)

        async def measure(names: tuple[str, ...]) -> None:
            for name in names:
                for _ in range(30):  # warm: imports, connection pools, caches
                    await sides[name]()
            for _ in range(calls):
                for name in names:
                    c0, t0 = time.process_time(), time.perf_counter()
                    await sides[name]()
                    times[name].append(time.perf_counter() - t0)
                    cpu[name] += time.process_time() - c0

        await measure(("bare", "ours"))  # the pair whose difference is our layer
        await measure(("http",))
    await shutdown()
    p50 = {k: statistics.median(v) * 1000 for k, v in times.items()}
    n = len(times["ours"])
    paired = statistics.median(o - b for o, b in zip(times["ours"], times["bare"], strict=True)) * 1000
    out: dict[str, Any] = {"calls_per_side": n, "added_p50_ms": round(paired, 3),
                           "layer_only_us": round(await _layer_only_us(), 1)}
    for name in sides:  # bare litellm; ours through litellm; ours through the direct OpenAI-wire transport
        out[f"{name}_p50_ms"] = round(p50[name], 3)
        out[f"{name}_cpu_ms_per_call"] = round(cpu[name] / n * 1000, 3)
    return out


async def throughput(make: Callable[[str, int], Call], concurrency: int, latency_s: float,
                     duration: float) -> dict[str, Any]:
    from awm_runtime.models import reset_limiters

    reset_limiters()
    with Server(latency_s) as server:
        call = make(server.url, concurrency)
        await asyncio.gather(*(call() for _ in range(min(concurrency, 32))))  # warm
        started = time.monotonic()
        # Callers start over one latency; the window opens one latency after the last has started.
        window_from = started + 2 * latency_s
        stop_at = window_from + latency_s * duration
        spans: list[tuple[float, float]] = []
        errors = 0

        async def caller(i: int) -> None:
            nonlocal errors
            await asyncio.sleep(i * latency_s / concurrency)
            while time.monotonic() < stop_at:
                begun = time.monotonic()
                try:
                    await call()
                except Exception:
                    errors += 1
                    continue
                spans.append((begun, time.monotonic()))

        cpu0, server0, shards0 = time.process_time(), server.cpu_s(), _children_cpu_s()
        await asyncio.gather(*(caller(i) for i in range(concurrency)))
        cpu = time.process_time() - cpu0 + _children_cpu_s() - shards0
        server_cpu = server.cpu_s() - server0
    return {"concurrency": concurrency, "latency_s": latency_s, "errors": errors,
            **littles_law(spans, window_from, stop_at, concurrency / latency_s),
            "client_cpu_ms_per_call": round(cpu / max(len(spans), 1) * 1000, 2),
            "server_cpu_ms_per_call": round(server_cpu / max(len(spans), 1) * 1000, 2)}


def littles_law(spans: list[tuple[float, float]], window_from: float, stop_at: float,
                ideal_per_s: float) -> dict[str, Any]:
    """Throughput over [window_from, stop_at] from each call's (start, end): calls in flight on
    average over the window, divided by the mean time of the calls that ended in it."""
    window = stop_at - window_from
    busy = sum(max(0.0, min(end, stop_at) - max(begun, window_from)) for begun, end in spans)
    ended = [end - begun for begun, end in spans if window_from <= end <= stop_at]
    in_flight = busy / window
    mean_s = sum(ended) / len(ended) if ended else float("inf")
    rate = in_flight / mean_s
    return {"window_s": round(window, 2), "completed": len(ended), "in_flight_mean": round(in_flight, 1),
            "mean_call_s": round(mean_s, 4), "per_s": round(rate, 1), "ideal_per_s": round(ideal_per_s, 1),
            "efficiency": round(rate / ideal_per_s, 3),
            "counted_per_s": round(len(ended) / window, 1)}


async def _layer_only_us(n: int = 20000) -> float:
    """Microseconds per call of ModelClient itself, over a transport that answers at once."""
    from awm_runtime._types import Usage
    from awm_runtime.models import ModelClient, ModelConfig, ModelReply

    class Instant:
        async def attempt(self, *_: Any) -> ModelReply:
            return ModelReply(content="ok", usage=Usage(calls=1, prompt_tokens=10, completion_tokens=2))

    client = ModelClient(ModelConfig(alias="null", model="openai/null", api_base="http://127.0.0.1:9/v1"), "policy",
                         transport=Instant())
    for _ in range(1000):
        await client.complete(PROMPT)
    started = time.perf_counter()
    for _ in range(n):
        await client.complete(PROMPT)
    return (time.perf_counter() - started) / n * 1e6


def _loads(specs: list[str] | None) -> list[tuple[int, float]]:
    out = []
    for spec in specs or ["256x2", "1000x5"]:
        n, _, s = spec.partition("x")
        out.append((int(n), float(s)))
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from awm_runtime.models import auto_procs, shutdown, start_call_procs

    os.environ[KEY_ENV] = KEY
    procs = auto_procs() if args.model_procs is None else args.model_procs
    result: dict[str, Any] = {"load_avg": list(os.getloadavg()), "cpus": os.cpu_count(), "model_procs": procs}
    table: list[list[Any]] = []
    if not args.skip_overhead:
        o = await overhead(args.calls)
        result["overhead"] = o
        table.append(["added p50 per call over bare litellm", f"{o['added_p50_ms']} ms", "<= 0.5 ms"])
        table.append(["our layer alone (null transport)", f"{o['layer_only_us']} us", ""])
        cpu = f"{o['bare_cpu_ms_per_call']} / {o['ours_cpu_ms_per_call']} / {o['http_cpu_ms_per_call']} ms"
        table.append(["CPU per call: bare / ours via litellm / ours direct", cpu, ""])
        table.append(["p50 per call: ours direct vs bare litellm", f"{o['http_p50_ms']} vs {o['bare_p50_ms']} ms", ""])
    result["throughput"] = []
    for n, latency in _loads(args.load):
        if args.bare:
            b = await throughput(_bare_factory, n, latency, args.duration)
            result["throughput"].append({"side": "bare", **b})
            table.append([f"bare litellm, {n} x {latency:g}s", _cell(b), ""])
        if args.litellm:
            await start_call_procs(procs)
            try:
                t = await throughput(_ours_litellm, n, latency, args.duration)
            finally:
                await shutdown()
            result["throughput"].append({"side": "ours-litellm", "model_procs": procs, **t})
            table.append([f"ours via litellm, {procs} call procs, {n} x {latency:g}s", _cell(t), ""])
        t = await throughput(_ours, n, latency, args.duration)
        await shutdown()
        result["throughput"].append({"side": "ours", **t})
        target = ">= 90%" if (n, latency) == (256, 2.0) else ">= 75%" if (n, latency) == (1000, 5.0) else ""
        table.append([f"ours (auto: direct), {n} x {latency:g}s", _cell(t), target])
    result["load_avg_after"] = list(os.getloadavg())
    result["table"] = table
    return result


def _bare_factory(url: str, _concurrency: int) -> Call:
    return _bare(url)


def _ours_litellm(url: str, concurrency: int) -> Call:
    return _ours(url, concurrency, "litellm")


def _cell(t: dict[str, Any]) -> str:
    return (f"{t['efficiency']:.1%} of ideal (Little's law; {t['mean_call_s']:.3f} s per call), "
            f"{t['client_cpu_ms_per_call']} ms CPU/call")
