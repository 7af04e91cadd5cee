"""Pack readable scenario sources into AWM JSONL files (`awm-worlds pack`).

A source folder holds scenario.json, schema.sql, seed.sql, app.py, tasks.json,
solutions.json and verifiers/task_NN.py, task_NN_sql.py, task_NN_sql.json.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from pathlib import Path
from typing import Any

from awm_runtime._errors import ConfigError
from awm_runtime.worlds._names import normalize_scenario

SPLIT_SEED = 20261121
TEST_FRACTION = 0.4
_CREATE_TABLE = re.compile(r"^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?[\"`\[]?(\w+)", re.I)
_CREATE_INDEX = re.compile(r"^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+.*?\s+ON\s+[\"`\[]?(\w+)", re.I | re.S)
_INSERT = re.compile(r"^\s*INSERT\s+(?:OR\s+\w+\s+)?INTO\s+[\"`\[]?(\w+)", re.I)


def split_sql(text: str) -> list[str]:
    """Split a SQL script into complete statements, keeping each statement's text as written."""
    statements, buf = [], ""
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("--") and not buf.strip():
            continue  # whole-line comments between statements are for the human reader
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                statements.append(buf.strip())
            buf = ""
    if buf.strip():
        statements.append(buf.strip())
    return statements


def _schema(src: Path) -> list[dict[str, Any]]:
    tables: dict[str, dict[str, Any]] = {}
    for stmt in split_sql((src / "schema.sql").read_text(encoding="utf-8")):
        if m := _CREATE_TABLE.match(stmt):
            tables[m.group(1)] = {"name": m.group(1), "ddl": stmt, "indexes": []}
        elif (m := _CREATE_INDEX.match(stmt)) and m.group(1) in tables:
            tables[m.group(1)]["indexes"].append(stmt)
        else:
            raise ConfigError(f"{src / 'schema.sql'}: cannot place statement: {stmt[:80]}")
    return list(tables.values())


def _samples(src: Path) -> list[dict[str, Any]]:
    groups: dict[str, list[str]] = {}
    for stmt in split_sql((src / "seed.sql").read_text(encoding="utf-8")):
        m = _INSERT.match(stmt)
        if not m:
            raise ConfigError(f"{src / 'seed.sql'}: not an INSERT: {stmt[:80]}")
        groups.setdefault(m.group(1), []).append(stmt)
    return [{"table_name": t, "insert_statements": s} for t, s in groups.items()]


def _api_spec(code: str, scenario_id: str) -> dict[str, Any]:
    from awm_runtime.worlds._host import import_scenario_app

    doc = import_scenario_app(f"awm_pack_{scenario_id}", code).openapi()
    groups: dict[str, list[dict[str, Any]]] = {}
    for path, item in doc.get("paths", {}).items():
        for method, op in item.items():
            params: dict[str, Any] = {p["name"]: {"param_type": p["in"]} for p in op.get("parameters", [])}
            body = ((op.get("requestBody") or {}).get("content") or {}).get("application/json", {}).get("schema", {})
            ref = body.get("$ref", "")
            props = doc.get("components", {}).get("schemas", {}).get(ref.rsplit("/", 1)[-1], {}).get("properties", {})
            params.update({name: {"param_type": "body"} for name in props})
            tag = (op.get("tags") or ["default"])[0]
            groups.setdefault(tag, []).append({"path": path, "method": method.upper(),
                                               "operation_id": op.get("operationId"), "request_params": params})
    return {"api_groups": [{"group_name": g, "endpoints": e} for g, e in groups.items()]}


def _task_rows(src: Path, title: str, tasks: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    code_rows, sql_rows = [], []
    vdir = src / "verifiers"
    for idx, task in enumerate(tasks):
        code = (vdir / f"task_{idx:02d}.py").read_text(encoding="utf-8").strip() + "\n"
        code_rows.append({"scenario": title, "task_idx": idx, "task": task, "verification": {
            "code": code,
            "raw_response": json.dumps({"function_name": "verify_task_completion", "python_code": code})}})
        sql_code = (vdir / f"task_{idx:02d}_sql.py").read_text(encoding="utf-8").strip() + "\n"
        guidance = json.loads((vdir / f"task_{idx:02d}_sql.json").read_text(encoding="utf-8"))
        sql_rows.append({"scenario": title, "task_idx": idx, "task": task, "verification": {
            "code": sql_code, "raw_response": json.dumps(guidance, indent=2)}})
    return code_rows, sql_rows


def pack_sources(src_root: Path, out: Path) -> dict[str, Any]:
    """Pack every scenario folder under `src_root` into AWM files in `out`; return a summary."""
    files: dict[str, list[dict[str, Any]]] = {k: [] for k in (
        "gen_scenario", "gen_tasks", "gen_db", "gen_sample", "gen_envs",
        "gen_verifier.pure_code", "gen_verifier", "gen_spec")}
    solutions: list[dict[str, Any]] = []
    task_keys: list[tuple[str, int]] = []
    folders = sorted(p for p in Path(src_root).iterdir() if (p / "scenario.json").is_file())
    if not folders:
        raise ConfigError(f"no scenario folders (with scenario.json) under {src_root}")
    for src in folders:
        meta = json.loads((src / "scenario.json").read_text(encoding="utf-8"))
        title = meta["name"]
        sid = normalize_scenario(title)
        if sid != src.name:
            raise ConfigError(f"{src}: folder must be named {sid!r} (the normalised scenario name)")
        tasks = [t["task"] for t in json.loads((src / "tasks.json").read_text(encoding="utf-8"))]
        code = (src / "app.py").read_text(encoding="utf-8")
        files["gen_scenario"].append({"name": title, "description": meta.get("description", "")})
        files["gen_tasks"].append({"scenario": title, "tasks": tasks})
        files["gen_db"].append({"scenario": title, "db_path": f"databases/{sid}.db",
                                "db_schema": {"tables": _schema(src)}})
        files["gen_sample"].append({"scenario": title, "sample_data": {"tables": _samples(src)}})
        files["gen_envs"].append({"scenario": title, "db_path": f"databases/{sid}.db", "full_code": code})
        files["gen_spec"].append({"scenario": title, "api_spec": _api_spec(code, sid)})
        code_rows, sql_rows = _task_rows(src, title, tasks)
        files["gen_verifier.pure_code"].extend(code_rows)
        files["gen_verifier"].extend(sql_rows)
        solutions.extend(json.loads((src / "solutions.json").read_text(encoding="utf-8")))
        task_keys.extend((sid, i) for i in range(len(tasks)))

    write_dataset(out, files)
    (out / "solutions.json").write_text(json.dumps(solutions, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    split = make_split(task_keys)
    (out / "split.json").write_text(json.dumps(split, indent=1) + "\n", encoding="utf-8")
    return {"scenarios": len(folders), "tasks": len(task_keys), "train": len(split["train"]),
            "test": len(split["test"]), "out": str(out)}


def write_dataset(out: Path, files: dict[str, list[dict[str, Any]]]) -> None:
    """Write AWM JSONL files: `{"gen_scenario": [rows], ...}` -> out/gen_scenario.jsonl, ..."""
    out.mkdir(parents=True, exist_ok=True)
    for stem, rows in files.items():
        with (out / f"{stem}.jsonl").open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def scenario_rows(name: str, code: str, *, tables: list[dict[str, Any]], inserts: dict[str, list[str]],
                  tasks: list[str], code_verifiers: dict[int, str] | None = None,
                  sql_verifiers: dict[int, tuple[str, str]] | None = None) -> dict[str, list[dict[str, Any]]]:
    """One scenario's rows in every AWM file, from its parts (for tests and benchmarks).

    `tables` are `{name, ddl, indexes?}`; `inserts` maps a table to its INSERT statements;
    `sql_verifiers` maps a task to (code, raw_response).
    """
    return {
        "gen_scenario": [{"name": name, "description": f"{name} (generated)"}],
        "gen_tasks": [{"scenario": name, "tasks": tasks}],
        "gen_db": [{"scenario": name, "db_path": f"{normalize_scenario(name)}.db", "db_schema": {"tables": tables}}],
        "gen_sample": [{"scenario": name, "sample_data": {"tables": [
            {"table_name": t, "insert_statements": rows} for t, rows in inserts.items()]}}],
        "gen_envs": [{"scenario": name, "db_path": f"{normalize_scenario(name)}.db", "full_code": code}],
        "gen_verifier.pure_code": [{"scenario": name, "task_idx": i, "task": tasks[i], "verification": {"code": c}}
                                   for i, c in (code_verifiers or {}).items()],
        "gen_verifier": [{"scenario": name, "task_idx": i, "task": tasks[i],
                          "verification": {"code": c, "raw_response": raw}}
                         for i, (c, raw) in (sql_verifiers or {}).items()],
    }


def merge_rows(*parts: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Concatenate the rows of several scenarios file by file."""
    out: dict[str, list[dict[str, Any]]] = {}
    for part in parts:
        for stem, rows in part.items():
            out.setdefault(stem, []).extend(rows)
    return out


def make_split(task_keys: list[tuple[str, int]], *, seed: int = SPLIT_SEED,
               test_fraction: float = TEST_FRACTION) -> dict[str, Any]:
    """A seeded split by task, stratified per scenario so each scenario appears in both halves."""
    rng = random.Random(seed)
    train, test = [], []
    by_scenario: dict[str, list[int]] = {}
    for sid, idx in task_keys:
        by_scenario.setdefault(sid, []).append(idx)
    for sid in sorted(by_scenario):
        idxs = sorted(by_scenario[sid])
        rng.shuffle(idxs)
        n_test = round(len(idxs) * test_fraction)
        test += [[sid, i] for i in sorted(idxs[:n_test])]
        train += [[sid, i] for i in sorted(idxs[n_test:])]
    return {"seed": seed, "test_fraction": test_fraction, "train": train, "test": test}
