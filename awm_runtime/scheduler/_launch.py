"""Where and how a run runs: its directory, its id, its backend's width, its sinks and its stopping rule.

Part of preparing a run (`prepare` and `ready` call `settle`): every check here reads only the config,
so a run no backend can play is refused in one line before any world loads or model starts.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awm_runtime._config import RunConfig
from awm_runtime._errors import ConfigError
from awm_runtime._interfaces import Sink, StoppingRule
from awm_runtime.scheduler._outdir import out_dir
from awm_runtime.scheduler._plan import resolve_shards


@dataclass(frozen=True, slots=True)
class Launch:
    """How a prepared run runs, fixed once by `prepare`: the run directory (and the manifest of the run it
    resumes), the run's id, how many episode processes run it, the custom sinks, and the stopping rule of an
    `--until-decided` run."""

    out: Path
    previous: dict[str, Any] | None
    run_id: str
    shards: int
    sinks: tuple[Sink, ...] = ()
    stopping: StoppingRule | None = None


def settle(config: RunConfig, *, grouped: bool, sinks: Sequence[Sink] = (),
           stopping: StoppingRule | None = None) -> tuple[RunConfig, Launch]:
    """The config with its run directory filled in, and how the run runs; ConfigError (one line) for a bad
    `--out`, a run no backend can play as asked, or `until_decided` without a rule (`stopping` defaults to
    the sequential test at the config's alpha). `grouped`: the run is planned stage by stage (groups, forks)."""
    out, previous = out_dir(config)  # a bad --out is one line now, not after the preflight
    if config.out is None:
        config = config.model_copy(update={"out": out})
    shards = backend_shards(config, grouped, sinks)
    if config.until_decided and stopping is None:
        from awm_runtime.report import SequentialTest

        stopping = SequentialTest(config.alpha)
    run_id = str(previous["run_id"]) if previous and previous.get("run_id") else uuid.uuid4().hex
    return config, Launch(out, previous, run_id, shards, tuple(sinks), stopping if config.until_decided else None)


def backend_shards(config: RunConfig, grouped: bool, sinks: Sequence[Sink]) -> int:
    """How many episode processes the run's backend starts (1 for groups and Ray; ConfigError, one line, for a
    run no backend can play as asked)."""
    if grouped and config.ray is None and config.shards not in ("auto", 1):
        raise ConfigError("--group-size runs in one process (groups are planned stage by stage and finalised "
                          "together): use --shards 1")
    if config.ray and config.checkpoint != "none":
        raise ConfigError("--checkpoint needs the run's episodes on this machine (the checkpoints live in the run "
                          "directory): drop --ray, or run without checkpoints")
    shards = 1 if grouped or config.ray else resolve_shards(config.shards, config.concurrency)
    if (shards > 1 or config.ray) and sinks:
        raise ConfigError("custom sinks see the episodes of their own process only: use --shards 1 with sinks, "
                          "and no --ray")
    return shards
