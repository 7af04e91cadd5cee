"""Read an AgentWorldModel-format directory into scenarios, tasks and verifiers (BRIEF §1).

Rows are joined on the normalised scenario name. Bad rows are reported as `LoadProblem`s,
never fatal: whatever can run, runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awm_runtime._errors import ConfigError
from awm_runtime.worlds._names import normalize_scenario

REQUIRED_FILES = ("gen_scenario.jsonl", "gen_tasks.jsonl", "gen_db.jsonl", "gen_sample.jsonl", "gen_envs.jsonl")
CODE_VERIFIERS = "gen_verifier.pure_code.jsonl"
SQL_VERIFIERS = "gen_verifier.jsonl"
SPEC_FILE = "gen_spec.jsonl"
SOLUTIONS_FILE = "solutions.json"


@dataclass(frozen=True, slots=True)
class LoadProblem:
    """One thing wrong with the data, located precisely enough to fix it."""

    file: str
    scenario: str
    message: str
    line: int | None = None
    task_idx: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}" + (f":{self.line}" if self.line else "")
        what = self.scenario + (f" task {self.task_idx}" if self.task_idx is not None else "")
        return f"{where}: {what}: {self.message}"


@dataclass(frozen=True, slots=True)
class TableDef:
    name: str
    ddl: str
    indexes: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class VerifierDef:
    mode: str  # "code" | "sql"
    code: str
    raw_response: str = ""


@dataclass(frozen=True, slots=True)
class Solution:
    steps: tuple[tuple[str, dict[str, Any]], ...]
    final_answer: str = ""


@dataclass(slots=True)
class Scenario:
    """Everything needed to build, serve and judge one scenario."""

    id: str  # normalised name
    title: str
    description: str = ""
    tables: list[TableDef] = field(default_factory=list)
    inserts: list[tuple[str, str]] = field(default_factory=list)  # (table_name, statement)
    full_code: str = ""
    tasks: list[str] = field(default_factory=list)
    code_verifiers: dict[int, VerifierDef] = field(default_factory=dict)
    sql_verifiers: dict[int, VerifierDef] = field(default_factory=dict)
    spec: dict[str, Any] | None = None
    solutions: dict[int, Solution] = field(default_factory=dict)

    @property
    def runnable(self) -> bool:
        return bool(self.tables and self.full_code and self.tasks)


@dataclass(slots=True)
class Dataset:
    root: Path
    scenarios: dict[str, Scenario]
    problems: list[LoadProblem]


def _rows(path: Path, problems: list[LoadProblem]) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(LoadProblem(path.name, "?", f"not valid JSON ({exc.msg})", line=lineno))
                continue
            if not isinstance(row, dict):
                problems.append(LoadProblem(path.name, "?", "row is not a JSON object", line=lineno))
                continue
            yield lineno, row


def _scenario_of(row: dict[str, Any], key: str) -> str | None:
    value = row.get(key)
    return normalize_scenario(value) if isinstance(value, str) and value.strip() else None


def load_dataset(root: Path) -> Dataset:
    """Load an AWM-format directory. Raises ConfigError only if it is not one at all."""
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(f"worlds directory {str(root)!r} does not exist; pass --worlds builtin or a "
                          "directory holding the AgentWorldModel gen_*.jsonl files")
    missing = [f for f in REQUIRED_FILES if not (root / f).is_file()]
    if missing:
        raise ConfigError(f"{root} is not an AWM-format directory: missing {', '.join(missing)}")
    problems: list[LoadProblem] = []
    scenarios: dict[str, Scenario] = {}

    for lineno, row in _rows(root / "gen_scenario.jsonl", problems):
        sid = _scenario_of(row, "name")
        if sid is None:
            problems.append(LoadProblem("gen_scenario.jsonl", "?", "row has no 'name'", line=lineno))
            continue
        if sid in scenarios:
            problems.append(LoadProblem("gen_scenario.jsonl", sid, "duplicate scenario; first kept", line=lineno))
            continue
        scenarios[sid] = Scenario(id=sid, title=row["name"], description=str(row.get("description", "")))

    def owner(file: str, lineno: int, row: dict[str, Any]) -> Scenario | None:
        sid = _scenario_of(row, "scenario")
        if sid is None:
            problems.append(LoadProblem(file, "?", "row has no 'scenario'", line=lineno))
            return None
        if sid not in scenarios:
            problems.append(LoadProblem(file, sid, "scenario not in gen_scenario.jsonl", line=lineno))
            return None
        return scenarios[sid]

    _read_tasks(root, problems, owner)
    _read_db(root, problems, owner)
    _read_samples(root, problems, owner)
    _read_envs(root, problems, owner)
    for file, mode in ((CODE_VERIFIERS, "code"), (SQL_VERIFIERS, "sql")):
        if (root / file).is_file():
            _read_verifiers(root / file, mode, problems, owner)
    if (root / SPEC_FILE).is_file():
        for lineno, row in _rows(root / SPEC_FILE, problems):
            if (sc := owner(SPEC_FILE, lineno, row)) is not None and sc.spec is None:
                sc.spec = row.get("api_spec") if isinstance(row.get("api_spec"), dict) else None
    if (root / SOLUTIONS_FILE).is_file():
        _read_solutions(root / SOLUTIONS_FILE, scenarios, problems)

    for sc in scenarios.values():
        for what, ok in (("gen_tasks", sc.tasks), ("gen_db", sc.tables), ("gen_envs", sc.full_code)):
            if not ok:
                problems.append(LoadProblem(f"{what}.jsonl", sc.id, "no usable row; scenario cannot run"))
        for idx in range(len(sc.tasks)):
            if idx not in sc.code_verifiers and idx not in sc.sql_verifiers:
                problems.append(LoadProblem(CODE_VERIFIERS, sc.id, "no verifier for this task", task_idx=idx))
    return Dataset(root=root, scenarios=scenarios, problems=problems)


def _read_tasks(root: Path, problems: list[LoadProblem], owner: Any) -> None:
    file = "gen_tasks.jsonl"
    for lineno, row in _rows(root / file, problems):
        if (sc := owner(file, lineno, row)) is None:
            continue
        tasks = row.get("tasks")
        if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
            problems.append(LoadProblem(file, sc.id, "'tasks' is not a list of strings", line=lineno))
        elif sc.tasks:
            problems.append(LoadProblem(file, sc.id, "duplicate tasks row; first kept", line=lineno))
        else:
            sc.tasks = list(tasks)


def _read_db(root: Path, problems: list[LoadProblem], owner: Any) -> None:
    file = "gen_db.jsonl"
    for lineno, row in _rows(root / file, problems):
        if (sc := owner(file, lineno, row)) is None or sc.tables:
            continue
        tables = (row.get("db_schema") or {}).get("tables")
        if not isinstance(tables, list):
            problems.append(LoadProblem(file, sc.id, "db_schema.tables missing", line=lineno))
            continue
        for t in tables:
            if not isinstance(t, dict) or not isinstance(t.get("ddl"), str):
                problems.append(LoadProblem(file, sc.id, f"table entry without ddl: {str(t)[:80]}", line=lineno))
                continue
            sc.tables.append(TableDef(
                name=str(t.get("name", "")),
                ddl=t["ddl"],
                indexes=tuple(i for i in t.get("indexes") or () if isinstance(i, str)),
                examples=tuple(e for e in t.get("examples") or () if isinstance(e, str)),
            ))


def _read_samples(root: Path, problems: list[LoadProblem], owner: Any) -> None:
    file = "gen_sample.jsonl"
    for lineno, row in _rows(root / file, problems):
        if (sc := owner(file, lineno, row)) is None or sc.inserts:
            continue
        for t in (row.get("sample_data") or {}).get("tables") or ():
            name = str(t.get("table_name", "")) if isinstance(t, dict) else ""
            for stmt in (t.get("insert_statements") or ()) if isinstance(t, dict) else ():
                if isinstance(stmt, str):
                    sc.inserts.append((name, stmt))


def _read_envs(root: Path, problems: list[LoadProblem], owner: Any) -> None:
    file = "gen_envs.jsonl"
    for lineno, row in _rows(root / file, problems):
        if (sc := owner(file, lineno, row)) is None or sc.full_code:
            continue
        code = row.get("full_code")
        if not isinstance(code, str) or not code.strip():
            problems.append(LoadProblem(file, sc.id, "'full_code' missing or empty", line=lineno))
        else:
            sc.full_code = code


def _read_verifiers(path: Path, mode: str, problems: list[LoadProblem], owner: Any) -> None:
    for lineno, row in _rows(path, problems):
        if (sc := owner(path.name, lineno, row)) is None:
            continue
        idx = row.get("task_idx")
        ver = row.get("verification") or {}
        code = ver.get("code") if isinstance(ver, dict) else None
        if not isinstance(idx, int) or not isinstance(code, str):
            problems.append(LoadProblem(path.name, sc.id, "row lacks task_idx or verification.code", line=lineno))
            continue
        target = sc.code_verifiers if mode == "code" else sc.sql_verifiers
        # The released files hold duplicate rows; the first one wins.
        target.setdefault(idx, VerifierDef(mode=mode, code=code, raw_response=str(ver.get("raw_response") or "")))


def _read_solutions(path: Path, scenarios: dict[str, Scenario], problems: list[LoadProblem]) -> None:
    for sid, idx, solution in iter_solutions(path, problems):
        if sid in scenarios:
            scenarios[sid].solutions.setdefault(idx, solution)


def iter_solutions(path: Path, problems: list[LoadProblem]) -> Iterator[tuple[str, int, Solution]]:
    """Read a solutions file (BRIEF §5): a JSON list of {scenario, task_idx, steps, final_answer}."""
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read solutions file {path}: {exc}") from exc
    if not isinstance(rows, list):
        raise ConfigError(f"solutions file {path} must hold a JSON list of objects")
    for n, row in enumerate(rows):
        try:
            steps = tuple((str(s["tool"]), dict(s.get("arguments") or {})) for s in row["steps"])
            yield normalize_scenario(row["scenario"]), int(row["task_idx"]), Solution(
                steps=steps, final_answer=str(row.get("final_answer") or ""))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            problems.append(LoadProblem(Path(path).name, str(row)[:40], f"entry {n} is malformed ({exc!r})"))
