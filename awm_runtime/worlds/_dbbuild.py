"""Build a scenario's SQLite database from its schema and seed statements (BRIEF §1).

Seed SQL comes from the dataset, so it is untrusted: an authorizer refuses ATTACH/DETACH
(which could create or overwrite files anywhere) and extension loading stays off.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awm_runtime.worlds._format import DB_FILE, ScenarioSource
from awm_runtime.worlds._format import SAMPLE_FILE as SEED_FILE


@dataclass(frozen=True, slots=True)
class SeedFailure:
    """One statement that failed: which file it came from, its table, its head, and SQLite's words."""

    file: str
    table: str
    statement: str
    error: str


@dataclass(slots=True)
class BuildReport:
    statements_ok: int = 0
    failures: list[SeedFailure] = field(default_factory=list)
    retried_quotes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"statements_ok": self.statements_ok, "retried_quotes": self.retried_quotes,
                "failures": [[f.file, f.table, f.statement, f.error] for f in self.failures]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BuildReport:
        return cls(statements_ok=int(data["statements_ok"]), retried_quotes=int(data["retried_quotes"]),
                   failures=[SeedFailure(*map(str, f)) for f in data["failures"]])


def _deny_attach(action: int, *_args: Any) -> int:
    return sqlite3.SQLITE_DENY if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH) else sqlite3.SQLITE_OK


def _run_seed(conn: sqlite3.Connection, stmt: str, where: tuple[str, str], report: BuildReport) -> None:
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
        report.failures.append(SeedFailure(where[0], where[1], " ".join(stmt.split())[:160], str(exc)))
        return
    report.statements_ok += 1


def build_database(scenario: ScenarioSource, path: Path, *, foreign_keys: bool = False) -> BuildReport:
    """Create `path` from scratch: DDL, indexes, examples, then every seed statement one by one."""
    path = Path(path)
    path.unlink(missing_ok=True)
    report = BuildReport()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
        if foreign_keys:
            conn.execute("PRAGMA foreign_keys=ON")
        conn.set_authorizer(_deny_attach)
        conn.execute("BEGIN")
        for table in scenario.tables:
            for stmt in (table.ddl, *table.indexes, *table.examples):
                _run_seed(conn, stmt, (DB_FILE, table.name), report)
        for table_name, stmt in scenario.inserts:
            _run_seed(conn, stmt, (SEED_FILE, table_name), report)
        if conn.in_transaction:  # a seed row may itself have said COMMIT or ROLLBACK
            conn.execute("COMMIT")
    finally:
        conn.close()
    return report
