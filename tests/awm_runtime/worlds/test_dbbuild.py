"""DB building: DDL, indexes, seeds one by one, the \\' retry, and failures logged per statement."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from awm_runtime.worlds._dbbuild import build_database
from awm_runtime.worlds._format import Scenario, TableDef


def test_seed_failures_are_kept_and_quotes_retried(tmp_path: Path) -> None:
    sc = Scenario(id="s", title="S", tables=[TableDef("t", "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)",
                                                      ("CREATE INDEX i ON t(name)",))])
    sc.inserts = [
        ("t", "INSERT INTO t VALUES (1, 'ok')"),
        ("t", "INSERT INTO t VALUES (2, 'it\\'s')"),  # \' is rejected by SQLite; '' is the fix
        ("t", "INSERT INTO t VALUES (1, 'duplicate id')"),
        ("t", "INSERT INTO t VALUES (3, datetime('now', '-2 days'))"),
    ]
    report = build_database(sc, tmp_path / "x.db")
    assert report.statements_ok == 5 and report.retried_quotes == 1
    assert len(report.failures) == 1 and "UNIQUE" in report.failures[0][1]
    conn = sqlite3.connect(tmp_path / "x.db")
    assert conn.execute("SELECT name FROM t WHERE id = 2").fetchone() == ("it's",)
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'index'").fetchone() == (1,)
