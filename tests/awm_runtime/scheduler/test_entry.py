"""One way in: `prepare` is the only code that reads and checks a RunConfig; `run` executes what it returns."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from awm_runtime import RunConfig
from awm_runtime._errors import ConfigError
from awm_runtime.logs import EventLogSink
from awm_runtime.report import SequentialTest
from awm_runtime.scheduler import prepare, ready, revise, run
from awm_runtime.scheduler._launch import settle
from awm_runtime.scheduler._run import execute
from tests.awm_runtime.scheduler.conftest import MemoryWorld, StepPolicy, prepared

SCHEDULER = Path(__file__).resolve().parents[3] / "awm_runtime" / "scheduler"
# The executor's side of the scheduler: what runs a PreparedRun once it exists.
EXECUTOR = ("_run", "_backend", "_manifest", "_episode_pool", "_processes", "_ray", "_progress", "_control")
PREPARATION = {"awm_runtime.scheduler._prepare", "awm_runtime.scheduler._launch", "awm_runtime.scheduler._outdir",
               "awm_runtime.scheduler._entry", "awm_runtime.scheduler"}
TYPES_ONLY = {"PreparedRun", "Launch"}


def test_the_executor_does_not_call_back_into_preparation() -> None:
    """Walking run(prepared): no module of the executor imports anything of preparation but its two types."""
    for name in EXECUTOR:
        tree = ast.parse((SCHEDULER / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not {a.name for a in node.names} & PREPARATION, name
            elif isinstance(node, ast.ImportFrom) and node.module in PREPARATION:
                assert {a.name for a in node.names} <= TYPES_ONLY, (name, node.module, [a.name for a in node.names])


async def test_run_takes_a_config_and_prepares_it_first(tmp_path: Path) -> None:
    config = RunConfig(worlds="builtin", policy="sim/oracle", expert="none", scenarios="shop*", tasks="0",
                       out=tmp_path / "run", preflight="off")
    result = await run(config)
    assert result.ran == result.planned >= 1 and result.out == tmp_path / "run"
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["run_id"] == result.run_id and manifest["sessions"][0]["shards"] == 1


async def test_a_prepared_run_is_executed_as_prepared(tmp_path: Path) -> None:
    config = RunConfig(worlds="builtin", policy="sim/oracle", expert="none", scenarios="shop*", tasks="0",
                       out=None, preflight="off")
    prep = await prepare(config)
    try:
        assert prep.launch is not None and prep.config.out == prep.launch.out  # the one config holds the run directory
        assert prep.launch.previous is None and prep.launch.shards == 1 and prep.launch.stopping is None
        with pytest.raises(TypeError, match="pass sinks and stopping to prepare"):
            await run(prep, sinks=[EventLogSink()])
    finally:
        await prep.world.aclose()


async def test_the_executor_refuses_a_run_nobody_launched(tmp_path: Path) -> None:
    prep = prepared(tmp_path / "run", MemoryWorld(2), StepPolicy())
    with pytest.raises(TypeError, match="prepare\\(\\) or ready\\(\\) launched"):
        await execute(prep)
    result = await run(prep)  # the entry checks and launches it as prepare would
    assert result.ran == 2 and prep.launch is not None and prep.launch.out == tmp_path / "run"


def test_until_decided_runs_the_sequential_test_at_its_alpha_unless_told_otherwise(tmp_path: Path) -> None:
    prep = ready(prepared(tmp_path / "run", MemoryWorld(2), StepPolicy(), arms=("a", "b"), until_decided=True,
                          alpha=0.1))
    assert prep.launch is not None and isinstance(prep.launch.stopping, SequentialTest)
    assert prep.launch.stopping.alpha == 0.1
    mine = SequentialTest(0.01)
    _, launch = settle(prep.config, grouped=False, stopping=mine)
    assert launch.stopping is mine
    plain = ready(prepared(tmp_path / "other", MemoryWorld(2), StepPolicy()), stopping=mine)
    assert plain.launch is not None and plain.launch.stopping is None  # no --until-decided: no rule asked


def test_a_run_without_out_gets_a_fresh_directory_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config, launch = settle(RunConfig(policy="sim/oracle", expert="none"), grouped=False)
    assert config.out == launch.out and launch.out.parent == Path("runs") and not launch.out.exists()
    assert len(launch.run_id) == 32


async def test_revise_checks_and_launches_the_changed_run_again(tmp_path: Path) -> None:
    prep = ready(prepared(tmp_path / "run", MemoryWorld(3), StepPolicy()), sinks=[EventLogSink()])
    revised = await revise(prep, repeats=2)
    assert revised.planned == 6 and revised.launch is not None and len(revised.launch.sinks) == 1
    with pytest.raises(ConfigError, match="custom sinks see the episodes of their own process only"):
        await revise(prep, shards=2, concurrency=4)
    result = await run(ready(prepared(tmp_path / "two", MemoryWorld(3), StepPolicy(), repeats=2)))
    assert result.ran == 6
