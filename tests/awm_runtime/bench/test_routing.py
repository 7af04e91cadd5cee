"""awm-bench routing runs end to end on a small load and reports what it claims to measure."""

from __future__ import annotations

import json
import subprocess
import sys


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
    assert len(result["load_avg"]) == 3 and "added p50 per call" in proc.stderr
