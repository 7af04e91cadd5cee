"""DB building: DDL, indexes, seeds one by one, the \\' retry, failures per statement, FKs, no ATTACH."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from awm_runtime.worlds._dbbuild import BuildReport, build_database
from awm_runtime.worlds._format import ScenarioSource, TableDef

PARENT = TableDef("parent", "CREATE TABLE parent (id INTEGER PRIMARY KEY)")
CHILD = TableDef("child", "CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id))")


def test_seed_failures_are_kept_and_quotes_retried(tmp_path: Path) -> None:
    sc = ScenarioSource(tables=[TableDef("t", "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)",
                                                      ("CREATE INDEX i ON t(name)",))])
    sc.inserts = [
        ("t", "INSERT INTO t VALUES (1, 'ok')"),
        ("t", "INSERT INTO t VALUES (2, 'it\\'s')"),  # \' is rejected by SQLite; '' is the fix
        ("t", "INSERT INTO t VALUES (1, 'duplicate id')"),
        ("t", "INSERT INTO t VALUES (3, datetime('now', '-2 days'))"),
    ]
    report = build_database(sc, tmp_path / "x.db")
    assert report.statements_ok == 5 and report.retried_quotes == 1
    assert len(report.failures) == 1 and "UNIQUE" in report.failures[0].error
    assert (report.failures[0].file, report.failures[0].table) == ("gen_sample.jsonl", "t")
    conn = sqlite3.connect(tmp_path / "x.db")
    assert conn.execute("SELECT name FROM t WHERE id = 2").fetchone() == ("it's",)
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'index'").fetchone() == (1,)
    assert BuildReport.from_dict(report.to_dict()) == report


def test_bad_ddl_is_reported_against_gen_db_and_the_rest_builds(tmp_path: Path) -> None:
    sc = ScenarioSource(tables=[TableDef("bad", "CREATE TABLE bad (id INTEGER PRIMARY KEY,"), PARENT],
                  inserts=[("parent", "INSERT INTO parent VALUES (1)"), ("bad", "INSERT INTO bad VALUES (1)")])
    report = build_database(sc, tmp_path / "x.db")
    assert [(f.file, f.table) for f in report.failures] == [("gen_db.jsonl", "bad"), ("gen_sample.jsonl", "bad")]
    assert sqlite3.connect(tmp_path / "x.db").execute("SELECT id FROM parent").fetchall() == [(1,)]


def test_foreign_keys_are_enforced_only_when_asked(tmp_path: Path) -> None:
    sc = ScenarioSource(tables=[PARENT, CHILD],
                  inserts=[("parent", "INSERT INTO parent VALUES (1)"), ("child", "INSERT INTO child VALUES (1, 1)"),
                           ("child", "INSERT INTO child VALUES (2, 42)")])
    assert build_database(sc, tmp_path / "off.db").failures == []
    on = build_database(sc, tmp_path / "on.db", foreign_keys=True)
    assert [f.error for f in on.failures] == ["FOREIGN KEY constraint failed"]


def test_seed_sql_cannot_attach_other_files(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.db"
    sc = ScenarioSource(tables=[PARENT], inserts=[
        ("parent", f"ATTACH DATABASE '{target}' AS other"),
        ("parent", "INSERT INTO parent VALUES (1)"),
    ])
    report = build_database(sc, tmp_path / "x.db")
    assert not target.exists() and "not authorized" in report.failures[0].error
    assert report.statements_ok == 2


def test_a_seed_that_commits_or_rolls_back_does_not_break_the_build(tmp_path: Path) -> None:
    sc = ScenarioSource(tables=[PARENT], inserts=[
        ("parent", "INSERT INTO parent VALUES (1)"), ("parent", "COMMIT"), ("parent", "INSERT INTO parent VALUES (2)")])
    report = build_database(sc, tmp_path / "x.db")
    assert report.failures == []
    assert sqlite3.connect(tmp_path / "x.db").execute("SELECT count(*) FROM parent").fetchone() == (2,)
