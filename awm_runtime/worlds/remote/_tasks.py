"""`--tasks-file FILE`: the tasks of an MCP world, one JSON object a line: `{"task": TEXT, "id": ID}`, optionally
with `"success_criteria"` and `"failure_criteria"` (a string or a list of strings) for the judge.

A task's key is (scenario, task_idx). An `id` of the form `SCENARIO/N` (or `SCENARIO:N`) gives both, so runs
line up with the same tasks on OpenEnv or local worlds (and with `--solutions`); any other `id` keeps the
world's name as the scenario and the row's position as the index.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from awm_runtime._errors import ConfigError
from awm_runtime._types import Task
from awm_runtime.verifiers import Criteria
from awm_runtime.worlds._names import normalize_scenario

_KEYED = re.compile(r"^(?P<scenario>.+?)[/:](?P<idx>\d+)$")


def read_tasks_file(path: Path, default_scenario: str, *, title: str = "", kind: str = "app",
                    criteria: dict[tuple[str, int], Criteria] | None = None) -> list[Task]:
    """The file's tasks, in order; ConfigError (file:line) for anything malformed or duplicated.

    `title` names the world in prompts (default: the scenario), `kind` is the tasks' Task.kind, and
    `criteria`, when given, is filled with each task's success and failure criteria."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"--tasks-file {path}: {exc.strerror or exc}") from None
    tasks: list[Task] = []
    seen: dict[tuple[str, int], int] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--tasks-file {path}:{lineno}: not valid JSON ({exc.msg})") from None
        text = row.get("task") if isinstance(row, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"--tasks-file {path}:{lineno}: each line needs \"task\": a non-empty string")
        ident = row.get("id")
        match = _KEYED.match(str(ident)) if ident is not None else None
        if match and normalize_scenario(match["scenario"]):
            key = (normalize_scenario(match["scenario"]), int(match["idx"]))
        else:
            key = (default_scenario, len(tasks))
        if key in seen:
            raise ConfigError(f"--tasks-file {path}:{lineno}: task {key[0]}/{key[1]} already given on line "
                              f"{seen[key]}")
        seen[key] = lineno
        given = {name: _criteria(row.get(name), path, lineno, name) for name in ("success_criteria",
                                                                                 "failure_criteria")}
        if criteria is not None and any(given.values()):
            criteria[key] = Criteria(success=given["success_criteria"], failure=given["failure_criteria"])
        tasks.append(Task(scenario=key[0], task_idx=key[1], text=text, scenario_title=title or key[0],
                          kind=kind))  # type: ignore[arg-type]
    if not tasks:
        raise ConfigError(f"--tasks-file {path}: no tasks")
    return tasks


def _criteria(value: object, path: Path, lineno: int, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ConfigError(f"--tasks-file {path}:{lineno}: \"{name}\" must be a string or a list of strings")
    return tuple(i.strip() for i in items if i.strip())
