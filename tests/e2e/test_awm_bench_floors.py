"""`awm-bench floors` as a user runs it: every cost beside its floor and their ratio, JSON on stdout, a table on
stderr; the hidden injection lands in the model call's ratio (a smoke run, not a measurement)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_floors_bench_prints_each_cost_beside_its_floor() -> None:
    cmd = [sys.executable, "-c", "from awm_runtime.cli import bench_main; raise SystemExit(bench_main())", "floors",
           "--calls", "40", "--verifies", "5", "--model-calls", "60", "--resets", "10", "--episodes", "2",
           "--inject-us", "2000", "--inject-at", "model_call"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["suite"] == "floors" and result["injected"] == {"us": 2000, "at": ["model_call"]}
    for kind in ("tool_call", "verify", "model_call", "reset", "episode"):
        assert result[kind]["cost_us"] > 0 and result[kind]["floor_us"] > 0 and result[kind]["ratio"] > 0
    model = result["model_call"]
    # 2 ms of CPU burnt in each model call's path: the ratio carries it, over a floor well under 2 ms.
    assert model["cost_us"] > 2000 and model["ratio"] > 1 + 0.6 * 2000 / model["floor_us"]
    assert result["tool_call"]["ratio"] < model["ratio"]
    for row in ("tool call: cost / floor", "verify: cost / floor", "model call: cost / floor",
                "episode: cost / floor", "injected CPU (test only)"):
        assert row in proc.stderr
    usage = subprocess.run([*cmd[:3], "floors", "--help"], capture_output=True, text=True, timeout=60).stdout
    assert "--calls" in usage and "--repeats" in usage and "--inject-us" not in usage  # a test's knob, not a user's
