"""Event logs: per-episode context (STYLE #10), whole-line appends from many processes, redaction."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import structlog

from awm_runtime import ArmConfig, RunConfig
from awm_runtime.logs import EventStream, configure_logging
from awm_runtime.scheduler import prepare, run


async def test_two_concurrent_episodes_each_log_only_their_own_ids(tiny_dir: Path, tmp_path: Path) -> None:
    config = RunConfig(worlds=str(tiny_dir), policy="sim/oracle", expert="none", tasks="0,1", concurrency=4,
                       arms=(ArmConfig(name="left"), ArmConfig(name="right")), out=tmp_path / "run", shards=1)
    result = await run(await prepare(config))
    records = {r["episode_id"]: r for r in map(json.loads, (result.out / "episodes.jsonl").read_text().splitlines())}
    assert len(records) == 4
    seen: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
    names: dict[str, set[str]] = defaultdict(set)
    for line in (result.out / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if "episode_id" in event and event["event"] != "episode_ended":
            seen[event["episode_id"]].add((event["arm"], event["scenario"], event["task_idx"], event["run_id"]))
            names[event["episode_id"]].add(event["event"])
    assert set(seen) == set(records)
    for episode_id, contexts in seen.items():
        r = records[episode_id]
        assert contexts == {(r["arm"], r["scenario"], r["task_idx"], result.run_id)}
        assert {"episode_started", "turn_ended", "model_called", "tool_called"} <= names[episode_id]


APPENDER = """
import json, sys
from awm_runtime.logs import EventStream
stream = EventStream(sys.argv[1], flush_bytes=4096)
for i in range(3000):
    stream.msg(json.dumps({"writer": int(sys.argv[2]), "i": i, "pad": "x" * (i % 300)}))
stream.close()
"""


def test_processes_sharing_events_jsonl_never_tear_each_others_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(path), str(w)]) for w in range(4)]
    for p in procs:
        assert p.wait(120) == 0
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(events) == 12_000
    for w in range(4):
        assert [e["i"] for e in events if e["writer"] == w] == list(range(3000))


def test_event_stream_buffers_flushes_and_drops_after_close(tmp_path: Path) -> None:
    echo = io.StringIO()
    stream = EventStream(tmp_path / "e.jsonl", also=echo)
    stream.msg('{"a":1}')
    assert (tmp_path / "e.jsonl").read_text() == ""  # buffered
    stream.flush()
    assert (tmp_path / "e.jsonl").read_text() == '{"a":1}\n' == echo.getvalue()
    stream.close()
    stream.msg('{"late":true}')  # after the run: dropped, never raising in some later caller
    assert (tmp_path / "e.jsonl").read_text() == '{"a":1}\n'


def test_events_are_json_with_context_and_no_secrets(tmp_path: Path) -> None:
    stream = EventStream(tmp_path / "e.jsonl")
    saved = structlog.get_config()
    configure_logging(stream, secrets=["sk-live-abcdef123456"])
    try:
        with structlog.contextvars.bound_contextvars(episode_id="e1", arm="a"):
            structlog.get_logger().info("model_retry", error="401 for key sk-live-abcdef123456", wait_s=1.5)
    finally:
        structlog.configure(**saved)
        stream.close()
    event = json.loads((tmp_path / "e.jsonl").read_text())
    assert event["event"] == "model_retry" and event["episode_id"] == "e1" and event["arm"] == "a"
    assert "sk-live" not in json.dumps(event) and event["wait_s"] == 1.5 and "timestamp" in event


def test_warnings_reach_the_tap_redacted_and_other_events_do_not(tmp_path: Path) -> None:
    stream = EventStream(tmp_path / "e.jsonl")
    saved = structlog.get_config()
    seen: list[dict[str, object]] = []
    configure_logging(stream, secrets=["sk-live-abcdef123456"], on_warning=lambda e: seen.append(dict(e)))
    try:
        structlog.get_logger().info("model_retry", error="x")
        structlog.get_logger().warning("world_disk_small", note="key sk-live-abcdef123456")
        structlog.get_logger().error("world_open_failed", error="full")
    finally:
        structlog.configure(**saved)
        stream.close()
    assert [(e["event"], e["level"]) for e in seen] == [("world_disk_small", "warning"), ("world_open_failed", "error")]
    assert "sk-live" not in json.dumps(seen)
    assert len((tmp_path / "e.jsonl").read_text().splitlines()) == 3  # every event is still written


def test_a_full_disk_never_raises_from_a_log_call_and_tears_no_event_line(tmp_path: Path,
                                                                          monkeypatch: Any) -> None:
    """Issue 51: events.jsonl on a full disk: the flush that fails is cut back to whole lines and counted
    (`dropped`, summary `events_dropped`); the caller of a log call never sees the error."""
    import errno
    import os

    budget = [40]

    def disk(fd: int, data: Any) -> int:
        if budget[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = min(len(data), budget[0])
        budget[0] -= n
        return os.write(fd, bytes(data[:n]))

    monkeypatch.setattr(EventStream, "write", staticmethod(disk))
    stream = EventStream(tmp_path / "events.jsonl", flush_bytes=1)
    stream.msg('{"event": "a"}')  # 15 bytes: fits
    stream.msg('{"event": "b", "pad": "' + "x" * 60 + '"}')  # 25 bytes land, then ENOSPC: cut back, dropped
    stream.msg('{"event": "c"}')
    assert stream.dropped == 2
    assert (tmp_path / "events.jsonl").read_text() == '{"event": "a"}\n'
    budget[0] = 1000  # space freed
    stream.msg('{"event": "d"}')
    stream.close()
    assert [json.loads(x)["event"] for x in (tmp_path / "events.jsonl").read_text().splitlines()] == ["a", "d"]
