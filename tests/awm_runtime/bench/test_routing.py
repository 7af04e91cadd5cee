"""awm-bench routing runs end to end on a small load and reports what it claims to measure."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest


def test_routing_bench_small_load_prints_json_and_a_table() -> None:
    cmd = [sys.executable, "-c", "from awm_runtime.cli import bench_main; raise SystemExit(bench_main())",
           "routing", "--calls", "20", "--load", "16x0.3", "--duration", "4"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    o = result["overhead"]
    assert o["calls_per_side"] == 20 and o["layer_only_us"] > 0 and o["ours_cpu_ms_per_call"] > 0
    (t,) = result["throughput"]
    assert t["side"] == "ours" and t["concurrency"] == 16 and t["errors"] == 0
    assert 0.3 < t["efficiency"] <= 1.1 and t["ideal_per_s"] == round(16 / 0.3, 1)
    assert t["in_flight_mean"] > 0 and t["mean_call_s"] >= 0.3 and t["counted_per_s"] > 0
    assert len(result["load_avg"]) == 3 and "added p50 per call" in proc.stderr


def test_littles_law_reads_every_extra_millisecond() -> None:
    """Synthetic callers: N of them, each call taking R seconds back to back, staggered. The estimate
    is L / R whatever R is; a window count of lockstep waves would read 100% for R up to 1.33 L."""
    from awm_runtime.bench._routing import littles_law

    n, latency = 64, 2.0
    for extra in (0.0, 0.1, 0.2, 0.3, 0.6):
        per_call = latency * (1 + extra)
        spans = [(i * latency / n + k * per_call, i * latency / n + (k + 1) * per_call)
                 for i in range(n) for k in range(12)]
        got = littles_law(spans, 2 * latency, 6 * latency, n / latency)
        assert got["efficiency"] == pytest.approx(1 / (1 + extra), abs=0.002), extra
        assert got["in_flight_mean"] == n


async def test_an_injected_latency_per_call_drops_the_figure_by_its_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the wire: the same load with 60 ms added to every 300 ms call reads that much less."""
    import asyncio

    from awm_runtime.bench._routing import KEY, KEY_ENV, _ours, throughput

    monkeypatch.setenv(KEY_ENV, KEY)
    latency, extra = 0.3, 0.06

    def slowed(url: str, concurrency: int) -> Any:
        inner = _ours(url, concurrency)

        async def call() -> Any:
            reply = await inner()
            await asyncio.sleep(extra)
            return reply
        return call

    base = await throughput(_ours, 16, latency, 4.0)
    slow = await throughput(slowed, 16, latency, 4.0)
    assert base["errors"] == slow["errors"] == 0
    expected = base["efficiency"] * base["mean_call_s"] / (base["mean_call_s"] + extra)  # ~ 1 / 1.2 of base
    assert slow["efficiency"] == pytest.approx(expected, abs=0.03), (base, slow)
    assert slow["efficiency"] < 0.9 * base["efficiency"]
