"""Worlds: AWM-format datasets loaded, built, served as tools and verified."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from awm_runtime._errors import ConfigError
from awm_runtime.verifiers import Judge
from awm_runtime.worlds._builtin import BUILTIN_DATA, BUILTIN_SOURCES
from awm_runtime.worlds._check import (
    TaskCheck,
    check_tasks,
    parse_verifiers,
    scenario_report,
    spec_problems,
    trivial_tasks,
)
from awm_runtime.worlds._disk import in_flight_by_scenario
from awm_runtime.worlds._format import (
    SOLUTIONS_FILE,
    Dataset,
    LoadProblem,
    Scenario,
    ScenarioSource,
    Solution,
    VerifierDef,
    where_problems,
)
from awm_runtime.worlds._hub import AWM_1K, fetch_awm_1k, is_hub_spec, snapshot_commit
from awm_runtime.worlds._load import iter_solutions, load_dataset
from awm_runtime.worlds._names import normalize_scenario
from awm_runtime.worlds._options import MIN_DISK_MIB, WorldOptions
from awm_runtime.worlds._pack import make_split, merge_rows, pack_sources, scenario_rows, write_dataset
from awm_runtime.worlds._session import AwmSession
from awm_runtime.worlds._world import AwmWorld
from awm_runtime.worlds.remote import RemoteOptions, RemoteWorld, is_remote, remote_world

RunWorld = AwmWorld | RemoteWorld  # what a run plays on: the local engine, or a server reached over the wire



def resolve_worlds_dir(spec: str | Path) -> Path:
    """`builtin` names the worlds shipped in the package; `awm-1k[@REV]` the AgentWorldModel-1K release in the
    Hugging Face cache (downloaded on first use); anything else is a directory."""
    if str(spec) == "builtin":
        return BUILTIN_DATA
    if is_hub_spec(str(spec)):
        return fetch_awm_1k(str(spec))
    return Path(spec).expanduser()


def worlds_name(spec: str | Path, root: Path) -> str:
    return str(spec) if str(spec) == "builtin" or is_hub_spec(str(spec)) else root.name


def load_worlds(spec: str | Path = "builtin", *, solutions: Path | None = None,
                options: WorldOptions | None = None, judge: Judge | None = None,
                tasks_file: Path | None = None, remote: Mapping[str, Any] | None = None) -> RunWorld:
    """The worlds a spec names, chosen by its scheme. Nothing starts until first use.

    `builtin` or a directory: the local engine (AwmWorld). `openenv+http://HOST:PORT`, `mcp+http://HOST:PORT/PATH`
    or `mcp+stdio:COMMAND`: a remote world (RemoteWorld; `await world.connect()` before use; MCP worlds take
    their tasks from `tasks_file`, and `judge` decides their verdicts). `remote`: more RemoteOptions fields,
    e.g. `{"world_env": ("KEY=VAL",), "scenario_name": "notes"}`."""
    if is_remote(spec):
        o = options or WorldOptions()
        return remote_world(str(spec), tasks_file=tasks_file, judge=judge,
                            options=RemoteOptions(verifier=o.verifier, tool_timeout_s=o.tool_timeout_s,
                                                  solutions=solutions, **(remote or {})))
    if tasks_file is not None:
        raise ConfigError(f"--tasks-file is for MCP worlds (mcp+http://..., mcp+stdio:...), not {spec}")
    return load_local_worlds(spec, solutions=solutions, options=options, judge=judge)


def load_local_worlds(spec: str | Path = "builtin", *, solutions: Path | None = None,
                      options: WorldOptions | None = None, judge: Judge | None = None) -> AwmWorld:
    """Load an AWM-format directory (or the built-in worlds) as the local engine's World."""
    if is_remote(spec):
        raise ConfigError(f"{spec}: this command needs local worlds (builtin or an AWM-format directory)")
    root = resolve_worlds_dir(spec)
    dataset = load_dataset(root)
    if solutions is not None:
        for sid, idx, sol in iter_solutions(solutions, dataset.problems):
            if sid in dataset.scenarios:
                dataset.scenarios[sid].solutions[idx] = sol
    return AwmWorld(dataset, name=worlds_name(spec, root), options=options, judge=judge)


def load_split(world: RunWorld) -> dict[str, set[tuple[str, int]]]:
    """The dataset's pinned split (split.json), or the same seeded rule computed on the fly (remote worlds)."""
    path = world.dataset.root / "split.json" if isinstance(world, AwmWorld) else None
    if path is not None and path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
    else:
        data = make_split([t.key for t in world.tasks()])
    return {name: {(s, int(i)) for s, i in data[name]} for name in ("train", "test")}


__all__ = [
    "AWM_1K",
    "BUILTIN_DATA",
    "BUILTIN_SOURCES",
    "MIN_DISK_MIB",
    "SOLUTIONS_FILE",
    "AwmSession",
    "AwmWorld",
    "Dataset",
    "LoadProblem",
    "RemoteOptions",
    "RemoteWorld",
    "RunWorld",
    "Scenario",
    "ScenarioSource",
    "Solution",
    "TaskCheck",
    "VerifierDef",
    "WorldOptions",
    "check_tasks",
    "in_flight_by_scenario",
    "is_remote",
    "load_dataset",
    "load_local_worlds",
    "load_split",
    "load_worlds",
    "merge_rows",
    "normalize_scenario",
    "pack_sources",
    "parse_verifiers",
    "resolve_worlds_dir",
    "scenario_report",
    "scenario_rows",
    "snapshot_commit",
    "spec_problems",
    "trivial_tasks",
    "where_problems",
    "write_dataset",
]
