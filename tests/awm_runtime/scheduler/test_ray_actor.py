"""The episode actor's parts that need no cluster: the task digest a node checks, the event buffer that waits
for the driver's beat, a record's way back, and an actor that is stopped and finished before it ran anything.
(An actor running episodes on a node: tests/awm_runtime/scheduler/test_ray_run.py and tests/e2e/test_ray_run.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from awm_runtime import Task
from awm_runtime.scheduler import run
from awm_runtime.scheduler._ray_actor import EpisodeActor, EventBuffer, parse_record, tasks_digest
from tests.awm_runtime.scheduler.conftest import MemoryWorld, StepPolicy, prepared


def test_the_task_digest_names_the_tasks_whatever_their_order_and_sees_a_changed_text() -> None:
    tasks = [Task(scenario="s", task_idx=i, text=f"task {i}") for i in range(3)]
    assert tasks_digest(tasks) == tasks_digest(reversed(tasks))
    changed = [*tasks[:2], Task(scenario="s", task_idx=2, text="another text")]
    assert tasks_digest(changed) != tasks_digest(tasks)


def test_the_event_buffer_keeps_the_newest_lines_within_its_limit_and_counts_what_it_dropped() -> None:
    buffer = EventBuffer(limit=10)
    for line in ("aaaa\n", "bbbb\n", "cccc\n"):
        assert buffer.write(line) == 5
    buffer.flush()
    assert buffer.drain() == b"bbbb\ncccc\n" and buffer.dropped == 1
    assert buffer.drain() == b""
    buffer.write("x" * 50)  # one line longer than the limit is kept: the newest line is never dropped
    assert buffer.drain() == b"x" * 50


async def test_a_record_travels_back_as_its_json_line(tmp_path: Path) -> None:
    out = tmp_path / "run"
    await run(prepared(out, MemoryWorld(1), StepPolicy()))
    line = (out / "episodes.jsonl").read_bytes().splitlines()[0]
    record = parse_record(line)
    assert record.key == ("main", "mem", 0, 0) and record.episode_id == json.loads(line)["episode_id"]


async def test_an_actor_stopped_and_finished_before_any_episode_reports_nothing_run() -> None:
    actor = EpisodeActor({"grace_s": 5})
    beat = actor.beat()
    assert beat["in_flight"] == 0 and isinstance(beat["events"], bytes)
    actor.stop(0.5, hard=True)
    assert actor.control.stop_requested and actor.control.grace_s == 0.5
    bye = await actor.finish()
    assert bye["episodes"] == 0 and bye["cancelled"] == 0 and bye["loop_slices"] == {}
    assert set(bye["ray_node_overhead"]) == {"rss_mib", "cpu_s", "limits_cpu_s"}


def test_the_node_overhead_walks_the_process_tree_under_the_parent() -> None:
    # Walked from a grandchild, so the tree under its parent is that parent and itself: this process's parent is
    # pytest-xdist's controller, whose tree holds the other workers' Ray clusters (their limits actors included).
    probe = "import json; from awm_runtime.scheduler._ray_actor import ray_overhead; print(json.dumps(ray_overhead()))"
    parent = f"import subprocess, sys; sys.exit(subprocess.call([sys.executable, '-c', {probe!r}]))"
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, timeout=120, check=True)
    overhead = json.loads(out.stdout)
    assert overhead["rss_mib"] > 0 and overhead["cpu_s"] >= 0 and overhead["limits_cpu_s"] == 0
