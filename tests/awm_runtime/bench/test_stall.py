"""`awm-bench stall` as a user runs it, small: slow calls run side by side, hung ones end at their timeout."""

from __future__ import annotations

import json
import subprocess
import sys


def test_the_stall_suite_measures_side_by_side_calls() -> None:
    code = "from awm_runtime.cli import bench_main; raise SystemExit(bench_main())"
    proc = subprocess.run([sys.executable, "-c", code, "stall", "--slow-episodes", "4", "--slow-s", "0.5",
                           "--hang-episodes", "3", "--tool-timeout", "1.5", "--bystanders", "2"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    slow, hang = result["slow"], result["hang"]
    assert slow["errors"] == 0 and slow["call_max_s"] < 4 * 0.5  # one after another: 2 s of calls
    assert hang["errors"] == 3 and "did not finish within 1.5s" in hang["first_error"]
    assert hang["call_max_s"] < 3 * 1.5  # one after another: 4.5 s
    assert slow["bystander_errors"] == 0 and hang["bystander_errors"] == 0
    assert "awm-bench stall" in proc.stderr
