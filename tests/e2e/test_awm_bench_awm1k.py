"""awm-bench awm1k runs end to end and prints every figure the note needs (a smoke run, not a measurement)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_awm1k_bench_smoke(tmp_path: Path) -> None:
    cmd = [sys.executable, "-c", "from awm_runtime.cli import bench_main; raise SystemExit(bench_main())", "awm1k",
           "--scenarios", "3", "--concurrency", "8", "--data", str(tmp_path / "set")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert (r["tasks"], r["episodes"], r["complete"], r["outcomes"]) == (30, 30, 30, {"complete": 30})
    assert r["scenario_builds"] == 3 and r["scenario_imports"] >= 3 and r["met"]["all_complete"]
    assert r["episodes_per_s"] > 0 and r["run_wall_s"] > 0 and r["total_wall_s"] >= r["run_wall_s"]
    peak = r["peak_memory_mib"]
    assert 0 < peak["pss_sum"] <= peak["rss_sum"] and peak["processes_at_peak"] >= 3  # runtime + workers
    assert set(peak["pss_by_kind_at_peak"]) >= {"runtime", "world_worker"}
    assert r["processes_seen"]["runtime"] == 1 and r["cpus"] and len(r["load_average_before"]) == 3
    assert "scenario imports" in proc.stderr and "peak memory" in proc.stderr  # the table
