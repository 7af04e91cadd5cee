"""`awm-run --policy human`: a person at the terminal, played here by a scripted stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from awm_runtime.worlds import load_worlds
from tests.e2e.test_awm_run import records


def test_a_person_plays_a_builtin_task_at_the_terminal(tmp_path: Path) -> None:
    world = load_worlds("builtin")
    task = next(t for t in world.tasks() if t.scenario.startswith("homehub") and t.task_idx == 0)
    solution = world.solution(task)
    world.close()
    assert solution is not None
    lines = ["help", "no_such_tool {}"]
    lines += [f"{step[0]} {json.dumps(step[1])}" for step in solution.steps]
    lines += [f"answer {solution.final_answer or 'Done.'}"]
    out = tmp_path / "run"
    cmd = [sys.executable, "-c", "from awm_runtime.cli import run_main; raise SystemExit(run_main())",
           "--policy", "human", "--expert", "none", "--scenarios", "homehub*", "--tasks", "0", "--out", str(out),
           "--quiet"]
    proc = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=300,
                          env=os.environ.copy())
    assert proc.returncode == 0, proc.stderr
    (record,) = records(out)
    assert record["outcome"] == "complete" and record["policy"]["alias"] == "human"
    assert record["turns"] == len(solution.steps) + 1 and record["format_errors"] == {}
    assert task.text[:40] in proc.stderr and "unknown command or tool 'no_such_tool'" in proc.stderr
