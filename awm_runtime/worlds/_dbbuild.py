"""Build a scenario's SQLite database from its schema and seed statements (BRIEF §1)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from awm_runtime.worlds._format import Scenario


@dataclass(slots=True)
class BuildReport:
    statements_ok: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)  # (statement head, error)
    retried_quotes: int = 0


def _run_seed(conn: sqlite3.Connection, stmt: str, report: BuildReport) -> None:
    try:
        conn.execute(stmt)
    except sqlite3.Error as exc:
        # Real rows escape quotes as \' which SQLite rejects; the standard spelling is ''.
        if "\\'" in stmt:
            try:
                conn.execute(stmt.replace("\\'", "''"))
            except sqlite3.Error:
                pass
            else:
                report.retried_quotes += 1
                report.statements_ok += 1
                return
        report.failures.append((stmt[:160], str(exc)))
        return
    report.statements_ok += 1


def build_database(scenario: Scenario, path: Path, *, foreign_keys: bool = False) -> BuildReport:
    """Create `path` from scratch: DDL, indexes, examples, then every seed statement one by one."""
    path = Path(path)
    path.unlink(missing_ok=True)
    report = BuildReport()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
        if foreign_keys:
            conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("BEGIN")
        for table in scenario.tables:
            for stmt in (table.ddl, *table.indexes, *table.examples):
                _run_seed(conn, stmt, report)
        for _table, stmt in scenario.inserts:
            _run_seed(conn, stmt, report)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return report
