"""The AgentWorldModel-1K on-disk format (BRIEF §1): scenario index entries, row references, lazy readers.

A loaded dataset keeps, per scenario, its name, description and task texts, and where each of its
rows sits in the data files (file, line, byte offset). The large parts (`full_code`, the schema and
seed rows, the spec, verifier code) are read from disk by offset when they are used, and dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from awm_runtime._errors import WorldError
from awm_runtime.worlds._names import normalize_scenario

SCENARIO_FILE = "gen_scenario.jsonl"
TASKS_FILE = "gen_tasks.jsonl"
DB_FILE = "gen_db.jsonl"
SAMPLE_FILE = "gen_sample.jsonl"
ENVS_FILE = "gen_envs.jsonl"
CODE_VERIFIERS = "gen_verifier.pure_code.jsonl"
SQL_VERIFIERS = "gen_verifier.jsonl"
SPEC_FILE = "gen_spec.jsonl"
SOLUTIONS_FILE = "solutions.json"
# A scenario runs when each of these has a usable row for it (as OpenEnv: no gen_scenario row needed).
RUNNABLE_FILES = (ENVS_FILE, DB_FILE, SAMPLE_FILE, TASKS_FILE)
REQUIRED_FILES = RUNNABLE_FILES
VERIFIER_FILES: dict[str, str] = {"code": CODE_VERIFIERS, "sql": SQL_VERIFIERS}


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


def where_problems(problems: list[LoadProblem], root: Path | str | None = None, limit: int = 3) -> str:
    """The first few problems as one line, those with a line number first: what a user fixes when nothing runs.
    With `root`, each file is named by its path (`DIR/gen_tasks.jsonl:3: ...`)."""
    ranked = sorted(problems, key=lambda p: p.line is None)  # stable: file order kept within each group
    shown = [f"{root}/{p}" if root is not None else str(p) for p in ranked[:limit]]
    more = f" (and {len(problems) - limit} more)" if len(problems) > limit else ""
    return "; ".join(shown) + more


@dataclass(frozen=True, slots=True)
class RowRef:
    """Where one row sits: its file, 1-based line, and byte span."""

    file: str
    line: int
    offset: int
    size: int


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
class ScenarioSource:
    """What building and importing a scenario needs. Read when the scenario is built, then dropped."""

    tables: list[TableDef] = field(default_factory=list)
    inserts: list[tuple[str, str]] = field(default_factory=list)  # (table_name, statement)
    full_code: str = ""


@dataclass(slots=True)
class Scenario:
    """One scenario of a dataset: what is small enough to keep, and where the rest is."""

    id: str  # normalised name
    title: str
    description: str = ""
    tasks: list[str] = field(default_factory=list)
    rows: dict[str, RowRef] = field(default_factory=dict)  # data file -> the row used (the first usable)
    verifiers: dict[str, dict[int, RowRef]] = field(default_factory=lambda: {"code": {}, "sql": {}})
    solutions: dict[int, Solution] = field(default_factory=dict)
    table_count: int = 0
    seed_count: int = 0

    @property
    def missing(self) -> list[str]:
        """The data files without a usable row for this scenario, among those it needs to run."""
        return [f for f in RUNNABLE_FILES if f not in self.rows]

    @property
    def runnable(self) -> bool:
        return not self.missing

    def has_verifier(self, task_idx: int, mode: str) -> bool:
        return task_idx in self.verifiers.get(mode, {})


def scenario_key(row: dict[str, Any], key: str) -> str | None:
    value = row.get(key)
    return normalize_scenario(value) if isinstance(value, str) and value.strip() else None


def table_defs(row: dict[str, Any]) -> tuple[list[TableDef], list[str]]:
    """gen_db's `db_schema.tables` as TableDefs, and a complaint for each entry that is not one."""
    tables = (row.get("db_schema") or {}).get("tables") if isinstance(row.get("db_schema"), dict) else None
    if not isinstance(tables, list):
        return [], ["db_schema.tables missing"]
    out, bad = [], []
    for t in tables:
        if not isinstance(t, dict) or not isinstance(t.get("ddl"), str):
            bad.append(f"table entry without ddl: {str(t)[:80]}")
            continue
        out.append(TableDef(name=str(t.get("name", "")), ddl=t["ddl"],
                            indexes=tuple(i for i in t.get("indexes") or () if isinstance(i, str)),
                            examples=tuple(e for e in t.get("examples") or () if isinstance(e, str))))
    return out, bad


def seed_statements(row: dict[str, Any]) -> list[tuple[str, str]] | None:
    """gen_sample's `sample_data.tables[].insert_statements` as (table, statement); None if malformed."""
    data = row.get("sample_data")
    tables = data.get("tables") if isinstance(data, dict) else None
    if not isinstance(tables, list):
        return None
    out = []
    for t in tables:
        if not isinstance(t, dict):
            continue
        name = str(t.get("table_name", ""))
        out += [(name, s) for s in t.get("insert_statements") or () if isinstance(s, str)]
    return out


def verifier_def(row: dict[str, Any], mode: str) -> VerifierDef | None:
    ver = row.get("verification")
    code = ver.get("code") if isinstance(ver, dict) else None
    if not isinstance(code, str):
        return None
    assert isinstance(ver, dict)
    return VerifierDef(mode=mode, code=code, raw_response=str(ver.get("raw_response") or ""))


@dataclass(slots=True)
class Dataset:
    """A loaded dataset: the scenario index, the problems found while loading, and lazy row readers."""

    root: Path
    scenarios: dict[str, Scenario]
    problems: list[LoadProblem]

    def row(self, scenario_id: str, ref: RowRef) -> dict[str, Any]:
        """Read one row back by its offset; the file must not have changed since it was loaded."""
        why = ""
        try:
            with (self.root / ref.file).open("rb") as fh:
                fh.seek(ref.offset)
                row = orjson.loads(fh.read(ref.size))
        except (OSError, orjson.JSONDecodeError) as exc:
            row, why = None, f" ({exc})"
        key = "name" if ref.file == SCENARIO_FILE else "scenario"
        if not isinstance(row, dict) or scenario_key(row, key) != scenario_id:
            raise WorldError(f"{ref.file}:{ref.line}: the row of scenario {scenario_id!r} changed on disk since the "
                             f"dataset was loaded{why}; load it again")
        return row

    def source(self, scenario_id: str) -> ScenarioSource:
        """The scenario's schema, seed statements and code, read from its rows now."""
        sc = self.scenarios[scenario_id]
        if not sc.runnable:
            raise WorldError(f"scenario {scenario_id!r} cannot run: no usable row in {', '.join(sc.missing)}")
        tables, _ = table_defs(self.row(scenario_id, sc.rows[DB_FILE]))
        inserts = seed_statements(self.row(scenario_id, sc.rows[SAMPLE_FILE])) or []
        code = self.row(scenario_id, sc.rows[ENVS_FILE]).get("full_code")
        return ScenarioSource(tables=tables, inserts=inserts, full_code=code if isinstance(code, str) else "")

    def spec(self, scenario_id: str) -> dict[str, Any] | None:
        """The scenario's gen_spec `api_spec`, or None."""
        ref = self.scenarios[scenario_id].rows.get(SPEC_FILE)
        spec = self.row(scenario_id, ref).get("api_spec") if ref is not None else None
        return spec if isinstance(spec, dict) else None

    def verifier(self, scenario_id: str, task_idx: int, mode: str) -> VerifierDef | None:
        """A task's verifier in `mode` (code | sql), read from its row now; None if it has none."""
        ref = self.scenarios[scenario_id].verifiers.get(mode, {}).get(task_idx)
        return None if ref is None else verifier_def(self.row(scenario_id, ref), mode)
