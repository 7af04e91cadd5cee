"""The scheduler's way in for embedders: `run` a prepared run, or a config (prepared first)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import IO

from awm_runtime._config import RunConfig
from awm_runtime._interfaces import Sink, StoppingRule
from awm_runtime.scheduler._control import RunControl
from awm_runtime.scheduler._prepare import PreparedRun, prepare, ready
from awm_runtime.scheduler._progress import RunProgress
from awm_runtime.scheduler._run import RunResult, execute


async def run(what: PreparedRun | RunConfig, *, sinks: Sequence[Sink] = (), stopping: StoppingRule | None = None,
              on_start: Callable[[int, int], None] | None = None, control: RunControl | None = None,
              progress: RunProgress | None = None, log_stdout: IO[str] | None = None) -> RunResult:
    """Run every planned episode not already recorded; return the run's summary.

    `what` is what `prepare(config, sinks=..., stopping=...)` returned (`await run(await prepare(config))`),
    or a RunConfig, prepared here first with `sinks` and `stopping` (`until_decided`'s rule; by default the
    sequential test at `config.alpha`); a PreparedRun built by hand is checked and launched as `prepare` would.
    `control` stops the run early (signals, tests); `progress` is the live state a view reads; `log_stdout`
    also receives every event line. Cancelling the task that runs this cancels the in-flight episodes (not
    recorded), and still flushes the logs and writes summary.json."""
    if isinstance(what, RunConfig):
        prep = await prepare(what, sinks=sinks, stopping=stopping)
    elif what.launch is None:
        prep = ready(what, sinks=sinks, stopping=stopping)
    elif sinks or stopping is not None:
        raise TypeError("this run was prepared already: pass sinks and stopping to prepare(config, ...)")
    else:
        prep = what
    return await execute(prep, on_start=on_start, control=control, progress=progress, log_stdout=log_stdout)
