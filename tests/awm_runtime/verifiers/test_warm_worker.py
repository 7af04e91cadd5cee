"""A kept worker's `sqlite3.connect` (`BytesConnection`), in this process: what `sqlite3.connect` takes is taken,
and a job's DB opens as a private, read-only copy of its bytes with every refusal of `ReadOnlyConnection`."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from awm_runtime.verifiers import _warm_worker
from awm_runtime.verifiers._restrict import Refused


@pytest.fixture
def db(tmp_path: Path) -> Iterator[str]:
    path = tmp_path / "d.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
    conn.commit()
    conn.close()
    _warm_worker._DBS["/episodes/a b/final.db"] = path.read_bytes()
    yield "/episodes/a b/final.db"
    _warm_worker._DBS.clear()


@pytest.mark.parametrize(("args", "kwargs"), [
    ((), {}),
    ((2.0, 0, None, False), {}),  # timeout, detect_types, isolation_level, check_same_thread
    ((), {"timeout": 1.0, "isolation_level": None, "cached_statements": 4, "check_same_thread": False}),
    ((), {"factory": sqlite3.Connection, "detect_types": sqlite3.PARSE_DECLTYPES}),  # any factory is this class
    ((), {"unknown_keyword": 1}),  # ignored, as ReadOnlyConnection ignores it
])
def test_connect_takes_what_sqlite3_connect_takes(db: str, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    for name, uri in ((db, False), (f"file:{db.replace(' ', '%20')}?mode=ro", True)):
        conn = _warm_worker.connect_bytes(name, *args, uri=uri, **kwargs)
        assert type(conn) is _warm_worker.BytesConnection
        assert [r[0] for r in conn.execute("SELECT a FROM t ORDER BY a")] == [1, 2]
        conn.close()


def test_a_job_db_is_read_only_and_keeps_every_refusal(db: str) -> None:
    conn = _warm_worker.connect_bytes(db)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("DELETE FROM t")
    with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
        conn.execute("PRAGMA query_only = 0")
    with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
        conn.execute("ATTACH ':memory:' AS o")
    assert sqlite3.Connection.getlimit(conn, sqlite3.SQLITE_LIMIT_ATTACHED) == 0  # a second refusal of ATTACH
    for refused in (lambda: conn.set_authorizer(None), lambda: conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 9),
                    lambda: conn.enable_load_extension(True)):
        with pytest.raises(Refused):
            refused()
    memory = _warm_worker.connect_bytes(":memory:")  # private and writable
    memory.execute("CREATE TABLE m (a)")
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        _warm_worker.connect_bytes("/episodes/other/final.db")


def test_a_verifier_cannot_name_a_store_of_final_dbs(db: str) -> None:
    """The stores final DBs are written into (`_scratch`) open only for a job's own final-DB path: by their own
    names, as a URI or through ATTACH, they open nothing."""
    for name, uri in (("file:/awm-final-1?vfs=memdb&cache=shared", True), ("/awm-final-1", False),
                      ("file:/awm-final-1?vfs=memdb", True)):
        with pytest.raises(sqlite3.OperationalError, match="unable to open"):
            _warm_worker.connect_bytes(name, uri=uri)
    conn = _warm_worker.connect_bytes(db)
    with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
        conn.execute("ATTACH 'file:/awm-final-1?vfs=memdb' AS x")
