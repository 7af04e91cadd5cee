"""A kept worker's store for final DBs (`_scratch.Scratch`): each job's DB, written over the last one's, reads as
that DB's own file reads, whatever came before it: another DB with the same change counter, a changed schema
under the template's cookie, a write let through, a connection left open."""

from __future__ import annotations

import socket
import sqlite3
import struct
import threading
from collections.abc import Iterator
from itertools import count
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awm_runtime.verifiers import Kept
from awm_runtime.verifiers._delta import PAGE, changed_pages
from awm_runtime.verifiers._direct import job_frame, plan
from awm_runtime.verifiers._scratch import Scratch

_names = count()


def template_file(folder: Path) -> Path:
    path = folder / f"template{next(_names)}.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)")
    conn.execute("CREATE INDEX t_b ON t (b)")
    for k in range(12):  # a schema that spans more than page 1
        conn.execute(f"CREATE TABLE other{k} (x INTEGER, y TEXT, z BLOB, note TEXT DEFAULT '{'n' * 200}')")
    conn.executemany("INSERT INTO t (b) VALUES (?)", [(f"row {i}",) for i in range(200)])
    conn.commit()
    conn.close()
    return path


def episode(template: Path, statements: list[tuple[str, tuple[object, ...]]]) -> Path:
    """The template with `statements` run on it, one transaction each, as a world runs its tools' writes."""
    path = template.with_name(f"final{next(_names)}.db")
    path.write_bytes(template.read_bytes())
    conn = sqlite3.connect(path, isolation_level=None)
    for sql, args in statements:
        conn.execute(sql, args)
    conn.close()
    return path


def read(conn: sqlite3.Connection) -> tuple[object, ...]:
    return (conn.execute("SELECT * FROM t ORDER BY a").fetchall(),
            [r[:4] for r in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name")],
            conn.execute("PRAGMA integrity_check").fetchall())


def as_file(path: Path) -> tuple[object, ...]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return read(conn)
    finally:
        conn.close()


def load(scratch: Scratch, template: bytes, final: bytes) -> sqlite3.Connection:
    """`final` written into the store as a worker writes it (its pages unlike the template), and a job's
    connection to it."""
    pages = changed_pages(template, final)
    stream = memoryview(b"".join(final[i * PAGE:(i + 1) * PAGE] for i in pages))
    assert scratch.load(template, len(final), pages, stream, 0) == len(stream)
    conn = sqlite3.connect(scratch.uri, uri=True)
    conn.execute("PRAGMA query_only = 1")
    scratch.opened(conn)
    return conn


@pytest.fixture
def made(tmp_path: Path) -> Iterator[tuple[Path, Scratch]]:
    path = template_file(tmp_path)
    scratch = Scratch(path.read_bytes())
    yield path, scratch
    scratch.close()


def test_dbs_with_the_same_change_counter_each_read_as_their_own(made: tuple[Path, Scratch]) -> None:
    """Two episodes of one write each have the same change counter: a pager that trusted it would serve the
    first one's cached pages for the second."""
    template, scratch = made
    finals = [episode(template, [("UPDATE t SET b = ? WHERE a = 5", (f"episode {k}",))]) for k in range(3)]
    counters = {struct.unpack_from(">I", f.read_bytes(), 24) for f in finals}
    assert len(counters) == 1
    for final in [*finals, *finals]:
        conn = load(scratch, template.read_bytes(), final.read_bytes())
        assert read(conn) == as_file(final)
        scratch.end_job()


def test_a_changed_schema_under_the_templates_cookie_is_parsed_again(made: tuple[Path, Scratch]) -> None:
    """An episode that changed the schema and set the cookie back (`PRAGMA schema_version`) is read with its own
    schema, and the next episode with the template's."""
    template, scratch = made
    data = template.read_bytes()
    cookie = struct.unpack_from(">I", data, 40)[0]
    forged = episode(template, [("DROP TABLE t", ()),
                                ("CREATE TABLE t (a INTEGER PRIMARY KEY, c TEXT, d INT)", ()),
                                ("INSERT INTO t VALUES (1, 'forged', 2)", ()),
                                (f"PRAGMA schema_version = {cookie}", ())])
    assert struct.unpack_from(">I", forged.read_bytes(), 40)[0] == cookie
    plain = episode(template, [("DELETE FROM t WHERE a > 3", ())])
    extra = episode(template, [("CREATE TABLE extra (q TEXT)", ()), ("INSERT INTO extra VALUES ('hello')", ())])
    for final in (plain, forged, plain, forged, extra, plain, extra):
        conn = load(scratch, data, final.read_bytes())
        assert read(conn) == as_file(final)
        if final is extra:  # a table only this DB has is found (a statement naming it is prepared afresh)
            assert conn.execute("SELECT q FROM extra").fetchall() == [("hello",)]
        else:
            with pytest.raises(sqlite3.OperationalError, match="no such table"):
                conn.execute("SELECT q FROM extra")
        scratch.end_job()


def test_a_store_still_read_by_an_ended_jobs_statement_is_not_written(made: tuple[Path, Scratch]) -> None:
    """A statement not finalized keeps its read transaction even once its connection is closed; the next reader
    would then not check the change counter and would read the cached pages of the DB before."""
    template, scratch = made
    data = template.read_bytes()
    first = episode(template, [("DELETE FROM t WHERE a % 2 = 0", ())])
    second = episode(template, [("DELETE FROM t WHERE a % 2 = 1", ())])
    left = load(scratch, data, first.read_bytes())
    cursor = left.execute("SELECT * FROM t")
    cursor.fetchone()  # a read transaction, still open
    scratch.end_job()
    with pytest.raises(sqlite3.ProgrammingError):
        cursor.fetchone()
    assert scratch.busy()
    assert scratch.load(data, len(data), [], memoryview(b""), 0) is None
    del cursor
    assert not scratch.busy()
    assert read(load(scratch, data, second.read_bytes())) == as_file(second)
    scratch.end_job()


def test_a_write_let_through_reaches_no_later_db(made: tuple[Path, Scratch]) -> None:
    template, scratch = made
    data = template.read_bytes()
    final = episode(template, [("INSERT INTO t (b) VALUES ('new')", ())])
    load(scratch, data, final.read_bytes())
    writer = sqlite3.connect(scratch.uri, uri=True, isolation_level=None)  # what query_only would have refused
    writer.execute("INSERT INTO t (b) VALUES ('let through')")
    writer.execute("CREATE TABLE planted (x)")
    writer.close()
    scratch.end_job()
    for again in (final, episode(template, [("DELETE FROM t", ())])):
        assert read(load(scratch, data, again.read_bytes())) == as_file(again)
        scratch.end_job()


def test_a_db_larger_than_the_room_is_not_written(made: tuple[Path, Scratch]) -> None:
    template, scratch = made
    data = template.read_bytes()
    big = episode(template, [("INSERT INTO t (b) VALUES (?)", ("x" * (3 * len(data)),))]).read_bytes()
    pages = changed_pages(data, big)
    stream = b"".join(big[i * PAGE:(i + 1) * PAGE] for i in pages)
    assert scratch.load(data, len(big), pages, memoryview(stream), 0) is None
    assert scratch.load(data, len(data) + 10 * PAGE, [len(data) // PAGE + 9], memoryview(bytes(10)), 0) is None


_WRITES = st.lists(st.one_of(
    st.tuples(st.just("INSERT INTO t (b) VALUES (?)"), st.tuples(st.text(max_size=3000))),
    st.tuples(st.just("UPDATE t SET b = ? WHERE a % 7 = ?"), st.tuples(st.text(max_size=200),
                                                                       st.integers(0, 6))),
    st.tuples(st.just("DELETE FROM t WHERE a % 11 = ?"), st.tuples(st.integers(0, 10))),
    st.tuples(st.just("ALTER TABLE t ADD COLUMN e TEXT DEFAULT 'x'"), st.just(())),
), max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(episodes=st.lists(_WRITES, min_size=2, max_size=5))
def test_any_run_of_episodes_reads_as_their_files(made: tuple[Path, Scratch], episodes: list[list[tuple[str, tuple[
        object, ...]]]]) -> None:
    template, scratch = made
    data = template.read_bytes()
    for statements in episodes:
        final = episode(template, [s for i, s in enumerate(statements)  # one ALTER an episode at most
                                   if "ALTER" not in s[0] or all("ALTER" not in x[0] for x in statements[:i])])
        final_bytes = final.read_bytes()
        if len(final_bytes) > 2 * len(data):
            continue
        conn = load(scratch, data, final_bytes)
        assert read(conn) == as_file(final)
        scratch.end_job()
        final.unlink()


def test_the_stores_own_making_is_never_the_schema_a_job_reads(tmp_path: Path) -> None:
    """Making a store leaves a schema of its own (a table giving it room) parsed under some cookie; a template whose
    cookie happens to be that one must still be read with the template's schema."""
    path = tmp_path / "two.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)")
    conn.execute("CREATE INDEX t_b ON t (b)")
    conn.executemany("INSERT INTO t (b) VALUES (?)", [(f"row {i}",) for i in range(50)])
    conn.commit()
    conn.close()
    data = path.read_bytes()
    assert struct.unpack_from(">I", data, 40)[0] == 2  # what a fresh store's backup and one CREATE leave
    scratch = Scratch(data)
    try:
        final = episode(path, [("DELETE FROM t WHERE a < 10", ())])
        conn = load(scratch, data, final.read_bytes())
        assert read(conn) == as_file(final)
        with pytest.raises(sqlite3.OperationalError, match="no such table"):
            conn.execute("SELECT * FROM awm_room")
        scratch.end_job()
    finally:
        scratch.close()


def _outcome(conn: sqlite3.Connection) -> object:
    try:
        return read(conn)
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # junk in a text: Python cannot decode what SQLite read
        return type(exc).__name__


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=st.lists(st.tuples(st.one_of(st.integers(0, 99), st.integers(0, 1 << 20)),  # the header, or anywhere
                                 st.binary(min_size=1, max_size=8)), min_size=1, max_size=6))
def test_a_damaged_db_reads_as_a_private_copy_of_it_and_the_next_db_as_its_own(
        made: tuple[Path, Scratch], damage: list[tuple[int, bytes]]) -> None:
    """Bytes a hostile world wrote anywhere (page 1's header included): the store gives what a private copy of the
    same bytes gives, rows or the same kind of error, and leaves nothing for the next job's DB."""
    template, scratch = made
    data = template.read_bytes()
    final = bytearray(episode(template, [("UPDATE t SET b = 'x' WHERE a < 20", ())]).read_bytes())
    for at, junk in damage:
        at %= len(final)
        final[at:at + len(junk)] = junk[:len(final) - at]
    conn = load(scratch, data, bytes(final))
    private = sqlite3.connect(":memory:")
    private.deserialize(scratch.bytes())  # the same bytes, header fields as the store has them
    assert _outcome(conn) == _outcome(private)
    private.close()
    scratch.end_job()
    clean = episode(template, [("DELETE FROM t WHERE a > 100", ())])
    assert read(load(scratch, data, clean.read_bytes())) == as_file(clean)
    scratch.end_job()


def test_without_the_library_or_with_another_layout_no_store_is_made_and_jobs_open_private_copies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A SQLite whose memdb store is not laid out as expected (here: the reader count looked for elsewhere) or a
    library that cannot be had gives no store, and the worker opens each final DB as a private copy."""
    from awm_runtime.verifiers import _scratch, _warm_worker

    template = template_file(tmp_path)
    data = template.read_bytes()
    monkeypatch.setattr(_scratch, "_LOCKS_AT", 0)  # MemStore.sz read as the reader count: the check refuses it
    with pytest.raises(sqlite3.NotSupportedError, match="laid out"):
        Scratch(data)
    monkeypatch.setattr(_scratch, "_LIB", None)
    with pytest.raises(sqlite3.NotSupportedError, match="no named memdb store"):
        Scratch(data)
    kept = Kept("n" * 32, data)
    final = episode(template, [("DELETE FROM t WHERE a < 50", ())]).read_bytes()
    sent = plan({"/t/i.db": kept, "/e/f.db": final}, 32 << 20, Kept)
    assert sent.deltas  # the final DB goes as its pages, as a store would take it
    parts = job_frame({"id": 1, "code": "", "function": "f", "kwargs": {}}, sent, {"keep": [kept.digest]})
    a, b = socket.socketpair()
    try:
        writer = threading.Thread(target=a.sendall, args=(b"".join(parts),))
        writer.start()
        job = _warm_worker._read_job(b.fileno())
        writer.join()
    finally:
        a.close()
        b.close()
        _warm_worker._KEPT.clear()
        _warm_worker._SCRATCH.clear()
    assert job is not None and "broken" not in job and job["finals"] == {}
    assert bytes(job["dbs"]["/e/f.db"]) == final  # a private copy's bytes, as before
