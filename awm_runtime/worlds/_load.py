"""Load an AWM-format directory: one pass over each file, keeping only the index (BRIEF §1).

Rows are joined on the normalised scenario name. Every row is parsed once, checked, and reduced to
its offset. Bad rows and scenarios that cannot run are reported as `LoadProblem`s, never fatal:
whatever can run, runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from awm_runtime._errors import ConfigError
from awm_runtime.worlds._format import (
    CODE_VERIFIERS,
    DB_FILE,
    ENVS_FILE,
    REQUIRED_FILES,
    SAMPLE_FILE,
    SCENARIO_FILE,
    SOLUTIONS_FILE,
    SPEC_FILE,
    SQL_VERIFIERS,
    TASKS_FILE,
    VERIFIER_FILES,
    Dataset,
    LoadProblem,
    RowRef,
    Scenario,
    Solution,
    scenario_key,
    seed_statements,
    table_defs,
    verifier_def,
)
from awm_runtime.worlds._names import normalize_scenario


def _rows(root: Path, file: str, problems: list[LoadProblem]) -> Iterator[tuple[RowRef, dict[str, Any]]]:
    offset = 0
    with (root / file).open("rb") as fh:
        for lineno, line in enumerate(fh, 1):
            ref = RowRef(file, lineno, offset, len(line))
            offset += len(line)
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                problems.append(LoadProblem(file, "?", f"not valid JSON ({_json_error(line)})", line=lineno))
                continue
            if not isinstance(row, dict):
                problems.append(LoadProblem(file, "?", "row is not a JSON object", line=lineno))
                continue
            yield ref, row


def _json_error(line: bytes) -> str:
    """The standard library's words for why a line is not JSON (orjson's are terser)."""
    try:
        json.loads(line)
    except ValueError as exc:
        return exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
    return "invalid"


class _Loader:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.problems: list[LoadProblem] = []
        self.scenarios: dict[str, Scenario] = {}

    def entry(self, ref: RowRef, row: dict[str, Any], key: str = "scenario") -> Scenario | None:
        sid = scenario_key(row, key)
        if sid is None:
            self.problems.append(LoadProblem(ref.file, "?", f"row has no {key!r}", line=ref.line))
            return None
        if sid not in self.scenarios:
            self.scenarios[sid] = Scenario(id=sid, title=str(row[key]).strip())
        return self.scenarios[sid]

    def fresh(self, ref: RowRef, row: dict[str, Any], key: str = "scenario") -> Scenario | None:
        """The row's scenario, unless the row has none or the scenario already has a usable row here."""
        sc = self.entry(ref, row, key)
        if sc is not None and ref.file in sc.rows:
            self.problems.append(LoadProblem(ref.file, sc.id, "duplicate row; the first usable one is kept",
                                             line=ref.line))
            return None
        return sc

    def bad(self, sc: Scenario, ref: RowRef, message: str) -> None:
        self.problems.append(LoadProblem(ref.file, sc.id, message, line=ref.line))

    def scenarios_file(self) -> None:
        if not (self.root / SCENARIO_FILE).is_file():
            self.problems.append(LoadProblem(SCENARIO_FILE, "*", "file missing: scenarios run without descriptions"))
            return
        for ref, row in _rows(self.root, SCENARIO_FILE, self.problems):
            if (sc := self.fresh(ref, row, "name")) is not None:
                sc.rows[ref.file] = ref
                sc.title = str(row["name"]).strip()
                sc.description = str(row.get("description") or "")

    def tasks(self) -> None:
        for ref, row in _rows(self.root, TASKS_FILE, self.problems):
            if (sc := self.fresh(ref, row)) is None:
                continue
            tasks = row.get("tasks")
            if not isinstance(tasks, list) or not tasks or not all(isinstance(t, str) for t in tasks):
                self.bad(sc, ref, "'tasks' is not a non-empty list of strings")
            else:
                sc.rows[ref.file] = ref
                sc.tasks = list(tasks)

    def db(self) -> None:
        for ref, row in _rows(self.root, DB_FILE, self.problems):
            if (sc := self.fresh(ref, row)) is None:
                continue
            tables, complaints = table_defs(row)
            for complaint in complaints:
                self.bad(sc, ref, complaint)
            if tables:
                sc.rows[ref.file] = ref
                sc.table_count = len(tables)

    def samples(self) -> None:
        for ref, row in _rows(self.root, SAMPLE_FILE, self.problems):
            if (sc := self.fresh(ref, row)) is None:
                continue
            inserts = seed_statements(row)
            if inserts is None:
                self.bad(sc, ref, "sample_data.tables missing")
            else:
                sc.rows[ref.file] = ref
                sc.seed_count = len(inserts)

    def envs(self) -> None:
        for ref, row in _rows(self.root, ENVS_FILE, self.problems):
            if (sc := self.fresh(ref, row)) is None:
                continue
            code = row.get("full_code")
            if not isinstance(code, str) or not code.strip():
                self.bad(sc, ref, "'full_code' missing or empty")
            else:
                sc.rows[ref.file] = ref

    def spec(self) -> None:
        for ref, row in _rows(self.root, SPEC_FILE, self.problems):
            if (sc := self.fresh(ref, row)) is None:
                continue
            if not isinstance(row.get("api_spec"), dict):
                self.bad(sc, ref, "'api_spec' missing")
            else:
                sc.rows[ref.file] = ref

    def verifiers(self, mode: str) -> None:
        file = VERIFIER_FILES[mode]
        for ref, row in _rows(self.root, file, self.problems):
            if (sc := self.entry(ref, row)) is None:
                continue
            idx = row.get("task_idx")
            if not isinstance(idx, int) or isinstance(idx, bool) or idx < 0 or verifier_def(row, mode) is None:
                self.bad(sc, ref, "row lacks task_idx or verification.code")
                continue
            # The released files hold duplicate rows; the first one wins, silently (BRIEF §1).
            sc.verifiers[mode].setdefault(idx, ref)

    def report(self) -> None:
        for sc in self.scenarios.values():
            if not sc.runnable:
                self.problems.append(LoadProblem(sc.missing[0], sc.id, "cannot run: no usable row in "
                                                 + ", ".join(sc.missing)))
                continue
            if SCENARIO_FILE not in sc.rows and (self.root / SCENARIO_FILE).is_file():
                self.problems.append(LoadProblem(SCENARIO_FILE, sc.id, "no row: runs without a description"))
            for mode, file in VERIFIER_FILES.items():
                if not (self.root / file).is_file():
                    continue
                lacking = [i for i in range(len(sc.tasks)) if i not in sc.verifiers[mode]]
                if lacking:
                    self.problems.append(LoadProblem(file, sc.id, f"no verifier row for task {task_list(lacking)}"))
                extra = sorted(i for i in sc.verifiers[mode] if i >= len(sc.tasks))
                if extra:
                    self.problems.append(LoadProblem(file, sc.id, f"verifier rows for tasks it does not have: "
                                                     f"{task_list(extra)}"))


def task_list(idxs: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2, 5'."""
    out: list[str] = []
    for i in sorted(idxs):
        if out and out[-1].split("-")[-1] == str(i - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        else:
            out.append(str(i))
    return ", ".join(out)


def load_dataset(root: Path) -> Dataset:
    """Load an AWM-format directory. Raises ConfigError only if it is not one at all."""
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(f"worlds directory {str(root)!r} does not exist; pass --worlds builtin, awm-1k, or a "
                          "directory holding the AgentWorldModel gen_*.jsonl files")
    missing = [f for f in REQUIRED_FILES if not (root / f).is_file()]
    if missing:
        raise ConfigError(f"{root} is not an AWM-format directory: missing {', '.join(missing)}")
    loader = _Loader(root)
    loader.scenarios_file()
    loader.tasks()
    loader.db()
    loader.samples()
    loader.envs()
    for mode, file in VERIFIER_FILES.items():
        if (root / file).is_file():
            loader.verifiers(mode)
    if (root / SPEC_FILE).is_file():
        loader.spec()
    if (root / SOLUTIONS_FILE).is_file():
        for sid, idx, solution in iter_solutions(root / SOLUTIONS_FILE, loader.problems):
            if sid in loader.scenarios:
                loader.scenarios[sid].solutions.setdefault(idx, solution)
    loader.report()
    return Dataset(root=root, scenarios=loader.scenarios, problems=loader.problems)


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


__all__ = ["CODE_VERIFIERS", "SQL_VERIFIERS", "iter_solutions", "load_dataset", "task_list"]
