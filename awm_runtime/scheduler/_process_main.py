"""A shard: one worker process of a sharded run (`python -m awm_runtime.scheduler._process_main FD PARENT_PID`).

It reads its settings and units from stdin, runs them in its own event loop and episode pool, and
sends each finished unit's records to the parent on the pipe FD. It never writes episodes.jsonl,
and it dies with its parent (PR_SET_PDEATHSIG, and at end of stdin).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import orjson
import structlog

from awm_runtime._config import RunConfig
from awm_runtime._errors import ConfigError
from awm_runtime._log import get_logger
from awm_runtime._types import EpisodeRecord, EpisodeSpec
from awm_runtime._units import Unit
from awm_runtime.episode import CHECKPOINTS
from awm_runtime.isolation import mark_private
from awm_runtime.logs import EventLogSink, EventStream, configure_logging, new_tool_sets, record_line
from awm_runtime.report import summary_fields
from awm_runtime.scheduler._control import LoopLag, RunControl, cpu_s, must_finish, peak_rss_mib, rss_mib
from awm_runtime.scheduler._episode_pool import EpisodePool
from awm_runtime.scheduler._prepare import prepare
from awm_runtime.scheduler._progress import endpoint_dicts

log = get_logger("awm_runtime.scheduler")
PR_SET_PDEATHSIG = 1
BEAT_S = 0.5


def _die_with_parent(parent_pid: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: end of stdin still stops us
        pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


class _Link:
    """The two pipes to the parent, as asyncio streams."""

    def __init__(self, stdin: asyncio.StreamReader, out: asyncio.StreamWriter) -> None:
        self.stdin, self.out = stdin, out

    @classmethod
    async def open(cls, fd: int) -> _Link:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 26)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", 0))
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                            os.fdopen(fd, "wb", 0))
        return cls(reader, asyncio.StreamWriter(transport, protocol, None, loop))

    async def send(self, message: dict[str, Any], payload: bytes = b"") -> None:
        self.out.write(orjson.dumps(message) + b"\n" + payload)
        await self.out.drain()


async def _serve(fd: int) -> int:
    link = await _Link.open(fd)
    init = orjson.loads(await link.stdin.readline() or b"{}")
    if init.get("t") != "init":
        return 2
    events = EventStream(init["events"])
    configure_logging(events)
    try:
        config = RunConfig(**init["config"])
        prep = await prepare(config, check=False, shard=(int(init["shard"]), int(init["shards"])),
                             local_bases=init.get("local_servers") or {})
    except Exception as exc:  # the parent reports it; a shard has no terminal of its own
        await link.send({"t": "error", "message": f"{type(exc).__name__}: {exc}",
                         "config": isinstance(exc, ConfigError)})
        events.close()
        return 1
    configure_logging(events, secrets=prep.secrets)
    if config.checkpoint != "none":
        prep.checkpoint_root = Path(init["events"]).parent / CHECKPOINTS
    structlog.contextvars.bind_contextvars(shard=init["shard"])
    control = RunControl(float(init["grace_s"]))
    pool = EpisodePool(prep, run_id=init["run_id"], sinks=[EventLogSink()], concurrency=int(init["concurrency"]),
                       control=control)
    queue: asyncio.Queue[Unit | None] = asyncio.Queue()
    ids: dict[int, int] = {}  # id(unit) -> parent's unit id
    lag = LoopLag()
    sent_tools: set[str] = set()  # tool sets this shard already sent; the parent writes each once

    async def next_unit() -> Unit | None:
        unit = await queue.get()
        if unit is None:
            queue.put_nowait(None)  # wake the next idle worker too
        return unit

    async def done(unit: Unit, records: list[EpisodeRecord]) -> None:
        payload = await asyncio.to_thread(lambda: b"".join(record_line(r) for r in records))
        await link.send({"t": "unit", "id": ids.pop(id(unit)), "n": len(records),
                         "keys": [[r.arm, r.scenario, r.task_idx, r.repeat] for r in records],
                         "stats": [summary_fields(r) for r in records],
                         "tools": new_tool_sets(records, sent_tools)}, payload)

    async def listen() -> None:
        while line := await link.stdin.readline():
            msg = orjson.loads(line)
            kind = msg.get("t")
            if kind == "unit":
                unit = Unit([EpisodeSpec(**s) for s in msg["specs"]])
                ids[id(unit)] = msg["id"]
                queue.put_nowait(unit)
            elif kind == "end":
                queue.put_nowait(None)
            elif kind in ("stop", "hard"):
                control.grace_s = float(msg.get("grace_s", control.grace_s))
                control.stop("parent", hard=kind == "hard")
                queue.put_nowait(None)
        control.stop("parent_gone", hard=True)  # stdin closed: the parent is gone or giving up
        queue.put_nowait(None)

    async def beat() -> None:
        while True:
            await link.send({"t": "beat", "in_flight": pool.in_flight, "endpoints": endpoint_dicts(_endpoints()),
                             "lag_p99_ms": lag.percentile(0.99), "rss_mib": round(rss_mib(), 1)})
            await asyncio.to_thread(events.flush)
            await asyncio.sleep(BEAT_S)

    background = [asyncio.create_task(c) for c in (listen(), beat(), lag.run())]
    await link.send({"t": "ready", "pid": os.getpid()})
    try:
        await pool.run(next_unit, done)
        await link.send({"t": "bye", "cancelled": pool.cancelled, "loop_lag_ms": lag.to_dict(),
                         "loop_slices": pool.slices.to_dict(),
                         "peak_rss_mib": round(peak_rss_mib(), 1), "cpu_s": round(cpu_s(), 3)})
    except (BrokenPipeError, ConnectionResetError):
        pass  # the parent is gone; nothing can be recorded any more
    finally:
        for t in background:
            t.cancel()
        events.close()
        await must_finish(prep.world.aclose())
    return 0


def _endpoints() -> list[Any]:
    from awm_runtime.models import endpoint_stats

    return endpoint_stats()


def main() -> int:
    fd, parent_pid = int(sys.argv[1]), int(sys.argv[2])
    _die_with_parent(parent_pid)
    mark_private()  # a shard holds the keys too
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    return asyncio.run(_serve(fd))


if __name__ == "__main__":
    raise SystemExit(main())
