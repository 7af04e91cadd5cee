"""One backend per run, chosen once: this process, episode processes, or Ray; and the runs no backend plays."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awm_runtime._errors import ConfigError
from awm_runtime._types import EpisodeRecord
from awm_runtime.logs import EventLogSink, EventStream, RunDirWriter
from awm_runtime.scheduler import PreparedRun, RunControl, RunProgress, Unit, ready, run
from awm_runtime.scheduler._backend import Backend, InProcess, OnRay, Run, Sharded, choose_backend
from awm_runtime.scheduler._launch import backend_shards
from tests.awm_runtime.scheduler.conftest import MemoryWorld, StepPolicy, prepared


async def _nothing(unit: Unit, records: list[EpisodeRecord]) -> None:
    return None


def _prep(tmp_path: Path, **config: Any) -> PreparedRun:
    prep = prepared(tmp_path / "run", MemoryWorld(3), StepPolicy())
    prep.config = prep.config.model_copy(update=config)
    return ready(prep)


def _choose(tmp_path: Path, **config: Any) -> Backend:
    prep = _prep(tmp_path, **config)
    assert prep.launch is not None
    r = Run(prep, prep.launch, RunControl(), RunProgress(), _nothing)
    return choose_backend(r, writer=RunDirWriter(tmp_path / "w"), done=set(),
                          events=EventStream(tmp_path / "events.jsonl"))


def test_the_backend_follows_the_config(tmp_path: Path) -> None:
    local = _choose(tmp_path, shards=1)
    assert isinstance(local, InProcess) and local.shards == 1
    sharded = _choose(tmp_path, shards=3)
    assert isinstance(sharded, Sharded) and sharded.shards == 3
    assert isinstance(_choose(tmp_path, ray="127.0.0.1:6379"), OnRay)


def test_runs_no_backend_plays_are_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--checkpoint needs the run's episodes on this machine"):
        _prep(tmp_path, ray="127.0.0.1:6379", checkpoint="every")
    prep = prepared(tmp_path / "run", MemoryWorld(3), StepPolicy())
    prep.config = prep.config.model_copy(update={"shards": 2})
    with pytest.raises(ConfigError, match="custom sinks see the episodes of their own process only"):
        ready(prep, sinks=(EventLogSink(),))
    with pytest.raises(ConfigError, match="--group-size runs in one process"):
        backend_shards(prep.config, True, ())


async def test_the_in_process_backend_runs_a_stage_and_says_how_it_shared_the_loop(tmp_path: Path) -> None:
    prep = _prep(tmp_path)
    seen: list[str] = []

    async def record(unit: Unit, records: list[EpisodeRecord]) -> None:
        seen.extend(r.scenario for r in records)

    assert prep.launch is not None
    backend = InProcess(Run(prep, prep.launch, RunControl(), RunProgress(), record))
    await backend.start()
    units: Iterator[Unit] = prep.units()
    outcome = await backend.run_stage(units)
    assert seen == ["mem"] * 3 and "loop_slices" in outcome
    assert await backend.close() == {}


async def test_a_run_reports_its_backends_shards(tmp_path: Path) -> None:
    prep = prepared(tmp_path / "run", MemoryWorld(2), StepPolicy())
    result = await run(prep)
    assert result.summary["shards"] == 1 and result.ran == 2
