"""Sharding a run over worker processes on one machine, for when one event loop saturates.

The parent plans, feeds units to the shards on demand, applies group finalisers, and is the only
writer of episodes.jsonl, so each episode key lands exactly once and a killed parent leaves no
orphan writing behind it (shards die with their parent). Shards share events.jsonl, appending
whole lines. Wire: JSON lines; a finished unit is a header line followed by its record lines.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from awm_runtime._config import RunConfig
from awm_runtime._errors import AwmError, ConfigError
from awm_runtime._log import get_logger
from awm_runtime._types import EpisodeKey
from awm_runtime.isolation import kill_process
from awm_runtime.logs import EVENTS, RunDirWriter
from awm_runtime.models import local_bases
from awm_runtime.scheduler._control import RunControl, must_finish
from awm_runtime.scheduler._plan import split
from awm_runtime.scheduler._progress import RunProgress, merge_endpoints

if TYPE_CHECKING:
    from awm_runtime._units import Unit
    from awm_runtime.scheduler._prepare import PreparedRun

log = get_logger("awm_runtime.scheduler")

READY_TIMEOUT_S = 300.0
LINE_LIMIT = 1 << 28  # a record line can be large (long transcripts); this is a cap, not a buffer


@dataclass(slots=True)
class Shard:
    index: int
    capacity: int
    proc: asyncio.subprocess.Process
    reader: asyncio.StreamReader
    outstanding: dict[int, Unit] = field(default_factory=dict)
    beat: dict[str, Any] = field(default_factory=dict)
    bye: dict[str, Any] | None = None
    ended: bool = False

    @property
    def load(self) -> int:
        return sum(len(u.specs) for u in self.outstanding.values())

    def send(self, message: dict[str, Any]) -> None:
        stdin = self.proc.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.write(orjson.dumps(message) + b"\n")


async def _spawn(index: int, capacity: int, init: dict[str, Any], out: Path) -> Shard:
    read_fd, write_fd = os.pipe()
    stderr = (out / f"shard-{index}.log").open("ab")
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "awm_runtime.scheduler._process_main", str(write_fd), str(os.getpid()),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL, stderr=stderr,
            pass_fds=(write_fd,), start_new_session=True)  # a terminal's Ctrl-C reaches the parent only
    finally:
        os.close(write_fd)
        stderr.close()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", 0))
    shard = Shard(index, capacity, proc, reader)
    shard.send({**init, "shard": index, "concurrency": capacity})
    return shard


async def run_sharded(config: RunConfig, prep: PreparedRun, run_id: str, out: Path, shards: int,
                      units: Iterator[Unit], control: RunControl, progress: RunProgress, writer: RunDirWriter,
                      done: set[EpisodeKey]) -> dict[str, Any]:
    """Run `units` on `shards` worker processes; returns per-shard figures for the summary."""
    init = {"t": "init", "config": config.model_dump(mode="json"), "run_id": run_id, "events": str(out / EVENTS),
            "shards": shards, "grace_s": control.grace_s, "local_servers": local_bases()}
    fleet = [await _spawn(i, cap, init, out) for i, cap in enumerate(split(config.concurrency, shards))]
    for s in fleet:
        log.info("shard_started", shard=s.index, pid=s.proc.pid, concurrency=s.capacity)
    progress.endpoints = lambda: merge_endpoints([s.beat.get("endpoints", []) for s in fleet if not s.ended])
    feeder = _Feeder(units, fleet, control)
    tasks = [asyncio.create_task(_serve(s, feeder, prep, progress, writer, done)) for s in fleet]
    relay = asyncio.create_task(_relay_stop(fleet, control, feeder))
    try:
        await asyncio.gather(*tasks)
    finally:
        relay.cancel()
        await must_finish(_reap(fleet, tasks))
        progress.in_flight = 0
        for s in fleet:
            _drop_empty_log(out / f"shard-{s.index}.log")
    return {"shard_stats": [{"shard": s.index, "pid": s.proc.pid, "exit": s.proc.returncode, **(s.bye or {})}
                            for s in fleet]}


class _Feeder:
    """Hands out units on demand: each shard holds at most its capacity of episodes (plus one unit)."""

    def __init__(self, units: Iterator[Unit], fleet: list[Shard], control: RunControl) -> None:
        self.units = units
        self.fleet = fleet
        self.control = control
        self.ids = itertools.count()
        self.exhausted = False

    def top_up(self, shard: Shard) -> None:
        while not self.exhausted and not shard.ended and shard.load < shard.capacity:
            unit = None if self.control.stop_requested else next(self.units, None)
            if unit is None:
                self.finish()
                return
            uid = next(self.ids)
            shard.outstanding[uid] = unit
            shard.send({"t": "unit", "id": uid, "specs": [s.model_dump(mode="json") for s in unit.specs]})

    def finish(self) -> None:
        if not self.exhausted:
            self.exhausted = True
            for s in self.fleet:
                s.send({"t": "end"})


async def _relay_stop(fleet: list[Shard], control: RunControl, feeder: _Feeder) -> None:
    await control.stopping.wait()
    feeder.exhausted = True  # no more units; shards wind down within their grace
    for s in fleet:
        s.send({"t": "stop", "grace_s": control.grace_s})
    await control.hard.wait()
    for s in fleet:
        s.send({"t": "hard"})


async def _serve(shard: Shard, feeder: _Feeder, prep: PreparedRun, progress: RunProgress, writer: RunDirWriter,
                 done: set[EpisodeKey]) -> None:
    """Read one shard's messages until it exits; write its records."""
    try:
        first = orjson.loads(await asyncio.wait_for(shard.reader.readline(), READY_TIMEOUT_S) or b'{"t":"eof"}')
    except TimeoutError:
        first = {"message": f"not ready after {READY_TIMEOUT_S:g}s"}
    if first.get("t") != "ready":
        shard.ended = True
        error = ConfigError if first.get("config") else AwmError
        raise error(f"shard {shard.index} failed to start: {first.get('message', 'it exited')}")
    feeder.top_up(shard)
    while (line := await shard.reader.readline()).endswith(b"\n"):  # a line cut short: the shard died
        msg = orjson.loads(line)
        kind = msg.get("t")
        if kind == "unit":
            lines = [await shard.reader.readline() for _ in range(msg["n"])]
            if not all(raw.endswith(b"\n") for raw in lines):
                break
            shard.outstanding.pop(msg["id"])
            await must_finish(_write(lines, msg, progress, writer, done))
            feeder.top_up(shard)
        elif kind == "beat":
            shard.beat = msg
            progress.in_flight = sum(s.beat.get("in_flight", 0) for s in feeder.fleet if not s.ended)
        elif kind == "bye":
            shard.bye = {k: v for k, v in msg.items() if k != "t"}
            progress.cancelled += int(msg.get("cancelled", 0))
    shard.ended = True
    if shard.outstanding and shard.bye is None:
        log.error("shard_failed", shard=shard.index, pid=shard.proc.pid, lost_units=len(shard.outstanding),
                  note="its in-flight episodes are not recorded; --resume runs them")


async def _write(lines: list[bytes], msg: dict[str, Any], progress: RunProgress, writer: RunDirWriter,
                 done: set[EpisodeKey]) -> None:
    """A shard's records of one unit, as it wrote them: a sharded run's units carry no finaliser (groups and
    forks are planned stage by stage and run in one process: scheduler/_launch.backend_shards)."""
    keys = [tuple(k) for k in msg["keys"]]
    if msg.get("tools") and not await asyncio.to_thread(writer.add_tools, msg["tools"]):  # before their records
        return  # a full disk: the run is stopping (logs/_rundir.py)
    fresh = [i for i, k in enumerate(keys) if k not in done]
    if not await asyncio.to_thread(writer.append, b"".join(lines[i] for i in fresh)):
        return
    for i in fresh:
        progress.stats.add(msg["stats"][i])
    progress.recorded += len(fresh)


async def _reap(fleet: list[Shard], tasks: list[asyncio.Task[None]]) -> None:
    """Make sure no shard outlives the run: ask, wait, then kill."""
    for s in fleet:
        s.send({"t": "hard"})
        if s.proc.stdin is not None:
            s.proc.stdin.close()
    for s in fleet:
        try:
            async with asyncio.timeout(15):
                await s.proc.wait()
        except TimeoutError:
            kill_process(s.proc)
            await s.proc.wait()
    for t in tasks:
        t.cancel()


def _drop_empty_log(path: Path) -> None:
    try:
        if path.stat().st_size == 0:
            path.unlink()
    except OSError:
        pass
