"""Templates in kept verifier workers: a job names its template by digest (`Kept`); the template's bytes go from
the runtime to each kept worker once (never through the verifier server, which only mirrors what each worker
holds), and a job's final DB goes as the pages where it differs from the template. Each job still opens its own
copy: what a verifier does to it never reaches the next job. A bounded cache drops the least recently used
template, and a worker that replaces a failed one is sent it again."""

from __future__ import annotations

import asyncio
import hashlib
import socket
import sqlite3
from collections.abc import AsyncIterator
from itertools import count
from pathlib import Path

import pytest

from awm_runtime.verifiers import Kept, KeptStats, Sandbox, SandboxResult
from awm_runtime.verifiers._delta import PAGE

_names = count()
ROWS = ("import sqlite3\n"
        "def verify_x(final_db_path, initial_db_path, final_answer=''):\n"
        "    def rows(path):\n"
        "        return [r[0] for r in sqlite3.connect(path).execute('SELECT a FROM t ORDER BY a')]\n"
        "    return {'result': 'complete', 'initial': rows(initial_db_path), 'final': rows(final_db_path)}\n")


def db_bytes(tmp: Path, rows: list[int], pad: int = 0) -> bytes:
    """A DB of table t with `rows`, and a table of `pad` 1 KiB rows to make it span many pages."""
    path = tmp / f"db{next(_names)}.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INTEGER)")
    conn.execute("CREATE TABLE pad (b BLOB)")
    conn.executemany("INSERT INTO pad VALUES (?)", [(bytes(1024),) for _ in range(pad)])
    conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in rows])
    conn.commit()
    conn.close()
    return path.read_bytes()


def changed(template: bytes, tmp: Path, add: list[int]) -> bytes:
    """`template` with rows `add` inserted into t, as an episode changes its DB: most pages stay as they were."""
    path = tmp / f"final{next(_names)}.db"
    path.write_bytes(template)
    conn = sqlite3.connect(path)
    conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in add])
    conn.commit()
    conn.close()
    return path.read_bytes()


def kept(data: bytes) -> Kept:
    return Kept(hashlib.blake2b(data, digest_size=16).hexdigest(), data)


@pytest.fixture
async def box() -> AsyncIterator[Sandbox]:
    sandbox = Sandbox(memory_mb=256, reuse=True)
    yield sandbox
    await sandbox.aclose()


async def verify(box: Sandbox, template: Kept, final: bytes, code: str = ROWS, *, initial: str = "/t/initial.db",
                 timeout_s: float = 10.0) -> SandboxResult:
    data: dict[str, bytes | Kept] = {initial: template, "/e/final.db": final}
    return await box.run(code, "verify_x", {"initial_db_path": initial, "final_db_path": "/e/final.db",
                                            "final_answer": ""}, timeout_s=timeout_s, data=data)


async def test_a_template_travels_once_per_worker_and_each_final_db_as_its_changed_pages(box: Sandbox,
                                                                                        tmp_path: Path) -> None:
    template = db_bytes(tmp_path, [1, 2], pad=40)
    assert len(template) > 10 * PAGE
    for n in range(3, 8):
        result = await verify(box, kept(template), changed(template, tmp_path, list(range(3, n + 1))))
        assert result.value == {"result": "complete", "initial": [1, 2], "final": list(range(1, n + 1))}, result
    assert box.kept_stats == KeptStats(worker_hits=4, worker_sends=1)


async def test_a_final_db_unlike_its_template_goes_whole_and_arrives_intact(box: Sandbox, tmp_path: Path) -> None:
    template = db_bytes(tmp_path, [1], pad=20)
    other = db_bytes(tmp_path, [7, 8, 9], pad=25)  # another DB altogether: longer, every page different
    result = await verify(box, kept(template), other)
    assert result.value == {"result": "complete", "initial": [1], "final": [7, 8, 9]}
    assert (await verify(box, kept(template), template)).value["final"] == [1]  # an episode that changed nothing


TAMPER = ("import sqlite3\n"
          "def verify_x(final_db_path, initial_db_path, final_answer=''):\n"
          "    c = sqlite3.connect(initial_db_path)\n"
          "    refused = []\n"
          "    for sql in ('DELETE FROM t', 'PRAGMA query_only = 0', 'DROP TABLE t', 'INSERT INTO t VALUES (666)',\n"
          "                'PRAGMA writable_schema = 1', 'VACUUM'):\n"
          "        try:\n"
          "            c.execute(sql)\n"
          "        except sqlite3.Error as exc:\n"
          "            refused.append(str(exc))\n"
          "    try:\n"
          "        c.deserialize(b'not a database')\n"
          "    except sqlite3.Error as exc:\n"
          "        refused.append(str(exc))\n"
          "    again = sqlite3.connect(initial_db_path)\n"
          "    return {'result': 'complete', 'mine': [r[0] for r in c.execute('SELECT a FROM t')],\n"
          "            'fresh': [r[0] for r in again.execute('SELECT a FROM t')], 'refused': len(refused)}\n")


async def test_a_verifier_that_tampers_with_its_template_copy_changes_nothing_the_next_job_sees(
        box: Sandbox, tmp_path: Path) -> None:
    template = db_bytes(tmp_path, [1, 2, 3], pad=10)
    for _ in range(2):  # the same code: the second run is in the worker that kept the template
        result = await verify(box, kept(template), template, TAMPER)
        assert result.value is not None, result
        assert result.value["refused"] >= 5  # every write (a pragma that changes no row may pass)
        assert (result.value["mine"], result.value["fresh"]) == ([1, 2, 3], [1, 2, 3])
    check = await verify(box, kept(template), template)
    assert check.value == {"result": "complete", "initial": [1, 2, 3], "final": [1, 2, 3]}
    assert box.kept_stats.worker_hits == 1


async def test_an_unchanged_final_db_opens_as_the_template_and_tampering_with_it_reaches_no_later_job(
        box: Sandbox, tmp_path: Path) -> None:
    """A final DB that is its template's bytes goes by the template's digest and opens as the worker's shared
    read-only copy: the same refusals as the template's, and the next job of the code sees the pristine rows."""
    template = db_bytes(tmp_path, [1, 2, 3], pad=10)
    tamper = TAMPER.replace("connect(initial_db_path)", "connect(final_db_path)")
    for _ in range(2):
        result = await verify(box, kept(template), template, tamper)
        assert result.value is not None, result
        assert result.value["refused"] >= 5
        assert (result.value["mine"], result.value["fresh"]) == ([1, 2, 3], [1, 2, 3])
    check = await verify(box, kept(template), template)
    assert check.value == {"result": "complete", "initial": [1, 2, 3], "final": [1, 2, 3]}
    after = await verify(box, kept(template), changed(template, tmp_path, [4]))  # then a changed one, as its own
    assert after.value == {"result": "complete", "initial": [1, 2, 3], "final": [1, 2, 3, 4]}
    assert box.kept_stats.worker_sends == 2  # one worker per code, each sent the template once


LEAVE_OPEN = ("import sqlite3\n"
              "def verify_x(final_db_path, initial_db_path, final_answer=''):\n"
              "    cursor = sqlite3.connect(final_db_path).execute('SELECT a FROM t')\n"
              "    cursor.fetchone()\n"
              "    kept = [cursor]\n"
              "    kept.append(kept)  # a cycle: the cursor, mid-read, outlives the job until a collection\n"
              "    rows = [r[0] for r in sqlite3.connect(final_db_path).execute('SELECT a FROM t ORDER BY a')]\n"
              "    tamper = sqlite3.connect(final_db_path)\n"
              "    for sql in ('DELETE FROM t', 'PRAGMA query_only = 0', 'PRAGMA schema_version = 1'):\n"
              "        try:\n"
              "            tamper.execute(sql)\n"
              "        except sqlite3.Error:\n"
              "            pass\n"
              "    return {'result': 'complete', 'final': rows}\n")


async def test_final_dbs_written_over_one_another_in_a_worker_each_read_as_sent(box: Sandbox, tmp_path: Path) -> None:
    """A kept worker writes each final DB into one store per template (`_scratch`): episodes with the same change
    counter, a changed schema, and a verifier that leaves a statement reading its DB or tries to write to it, each
    leave the next job reading its own DB."""
    template = db_bytes(tmp_path, [1, 2], pad=40)
    same_counter = [changed(template, tmp_path, [n]) for n in (3, 4, 5)]
    assert len({f[24:28] for f in same_counter}) == 1
    path = tmp_path / "schema.db"
    path.write_bytes(template)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("ALTER TABLE t RENAME TO old")
    conn.execute("CREATE TABLE t (z INTEGER, a INTEGER)")
    conn.execute("INSERT INTO t VALUES (0, 99)")
    conn.execute("PRAGMA schema_version = 1")
    conn.close()
    for code in (ROWS, LEAVE_OPEN):
        for final, rows in [*zip(same_counter, ([1, 2, 3], [1, 2, 4], [1, 2, 5]), strict=True),
                            (path.read_bytes(), [99]), (same_counter[0], [1, 2, 3])]:
            result = await verify(box, kept(template), final, code)
            assert result.value is not None and result.value["final"] == rows, result


async def test_a_job_opens_a_copy_of_the_kept_bytes(tmp_path: Path) -> None:
    """In a worker, a job DB that is not a template opens a copy of its bytes (`deserialize` copies): a write to
    it, were one let through, would never reach the bytes the next job opens."""
    from awm_runtime.verifiers import _warm_worker

    template = db_bytes(tmp_path, [1, 2], pad=4)
    _warm_worker._DBS["/t/i.db"] = template
    try:
        conn = sqlite3.Connection.__new__(_warm_worker.BytesConnection)
        _warm_worker.BytesConnection.__init__(conn, "/t/i.db")
        sqlite3.Connection.set_authorizer(conn, None)  # what no verifier can do: lift the refusals
        sqlite3.Connection.execute(conn, "PRAGMA query_only = 0")
        sqlite3.Connection.execute(conn, "DELETE FROM t")
        assert sqlite3.Connection.execute(conn, "SELECT count(*) FROM t").fetchone() == (0,)
        fresh = _warm_worker.BytesConnection("/t/i.db")
        assert [r[0] for r in fresh.execute("SELECT a FROM t ORDER BY a")] == [1, 2]
        assert _warm_worker._DBS["/t/i.db"] == template
    finally:
        _warm_worker._DBS.clear()


def test_a_template_opens_one_shared_copy_and_a_write_let_through_never_reaches_a_later_job(tmp_path: Path) -> None:
    """A template's connections open the worker's one shared in-memory copy (its schema read once); were a write
    let through, the copy is dropped after the job (`check_shared`) and the next job opens a new one made from the
    kept bytes."""
    from awm_runtime.verifiers import _warm_worker as w

    template = db_bytes(tmp_path, [1, 2], pad=4)
    w._KEPT["d1"], w._DBS["/t/i.db"], w._TEMPLATE_OF["/t/i.db"] = template, template, "d1"
    try:
        first, second = w.BytesConnection("/t/i.db"), w.BytesConnection("/t/i.db")
        assert len(w._SHARED) == 1
        for conn in (first, second):
            assert [r[0] for r in conn.execute("SELECT a FROM t ORDER BY a")] == [1, 2]
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                conn.execute("DELETE FROM t")
            with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
                conn.deserialize(template)  # it attaches: refused, as on any connection in a worker
        w.check_shared(["d1"])
        assert len(w._SHARED) == 1  # nothing written: the copy stays for the next job
        sqlite3.Connection.set_authorizer(first, None)  # what no verifier can do: lift the refusals
        sqlite3.Connection.execute(first, "PRAGMA query_only = 0")
        sqlite3.Connection.execute(first, "DELETE FROM t")
        sqlite3.Connection.commit(first)
        assert [r[0] for r in second.execute("SELECT a FROM t")] == []  # the same copy: shared
        w.check_shared(["d1"])
        assert w._SHARED == {}
        fresh = w.BytesConnection("/t/i.db")
        assert [r[0] for r in fresh.execute("SELECT a FROM t ORDER BY a")] == [1, 2]
        for conn in (first, second, fresh):
            conn.close()
    finally:
        w._DBS.clear()
        w._TEMPLATE_OF.clear()
        w._KEPT.clear()
        for digest in list(w._SHARED):
            w._drop_shared(digest)


def test_a_template_without_a_shared_copy_opens_a_private_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shared copy that cannot be made (SQLite out of memory) is no verifier's fault: the job's connection opens
    a private copy of the kept bytes instead, read-only as ever."""
    from awm_runtime.verifiers import _warm_worker as w

    def no_memory(digest: str) -> str:
        raise sqlite3.OperationalError("out of memory")

    monkeypatch.setattr(w, "_shared", no_memory)
    template = db_bytes(tmp_path, [5], pad=2)
    w._KEPT["d3"], w._DBS["/t/i.db"], w._TEMPLATE_OF["/t/i.db"] = template, template, "d3"
    try:
        conn = w.BytesConnection("/t/i.db")
        assert [r[0] for r in conn.execute("SELECT a FROM t")] == [5]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("DELETE FROM t")
        conn.close()
    finally:
        w._DBS.clear()
        w._TEMPLATE_OF.clear()
        w._KEPT.clear()


def test_a_forgotten_template_drops_its_shared_copy(tmp_path: Path) -> None:
    from awm_runtime.isolation import HEADER, encode
    from awm_runtime.verifiers import _warm_worker as w

    template = db_bytes(tmp_path, [3], pad=2)
    w._KEPT["d2"], w._DBS["/t/i.db"], w._TEMPLATE_OF["/t/i.db"] = template, template, "d2"
    a, b = socket.socketpair()
    try:
        w.BytesConnection("/t/i.db").close()
        assert "d2" in w._SHARED
        body = encode({"id": 1, "forget": ["d2"], "blob_paths": [], "blob_sizes": []})
        a.sendall(HEADER.pack(len(body) + 1) + b"B" + body)
        job = w._read_job(b.fileno())
        assert job is not None and job["dbs"] == {} and "d2" not in w._KEPT and w._SHARED == {}
    finally:
        a.close()
        b.close()
        w._DBS.clear()
        w._TEMPLATE_OF.clear()
        w._KEPT.clear()


async def test_the_least_recently_used_template_is_dropped_past_the_bound(tmp_path: Path) -> None:
    a, b = db_bytes(tmp_path, [1], pad=8), db_bytes(tmp_path, [2], pad=8)
    sandbox = Sandbox(memory_mb=256, reuse=True, kept_bytes=len(a) + len(b) // 2)  # room for one of them
    try:
        for template, row in ((a, 1), (a, 1), (b, 2), (a, 1)):
            result = await verify(sandbox, kept(template), template, initial=f"/t/{row}.db")
            assert result.value == {"result": "complete", "initial": [row], "final": [row]}, result
        # a once, then held; b pushes a out (from the worker); a comes back
        assert sandbox.kept_stats == KeptStats(worker_hits=1, worker_sends=3)
    finally:
        await sandbox.aclose()


async def test_a_template_larger_than_the_bound_goes_with_each_job(tmp_path: Path) -> None:
    template = db_bytes(tmp_path, [4], pad=8)
    sandbox = Sandbox(memory_mb=256, reuse=True, kept_bytes=len(template) - 1)
    try:
        for _ in range(2):
            assert (await verify(sandbox, kept(template), template)).value["initial"] == [4]
        assert sandbox.kept_stats == KeptStats()
    finally:
        await sandbox.aclose()


@pytest.mark.parametrize("body", ["while True:\n        pass", "raise SystemExit(3)"])
async def test_a_worker_replacing_a_failed_one_is_sent_the_template_again(box: Sandbox, tmp_path: Path,
                                                                          body: str) -> None:
    template = db_bytes(tmp_path, [5, 6], pad=10)
    crash = ("def verify_x(final_db_path, initial_db_path, final_answer=''):\n"
             f"    if final_answer == 'crash':\n        {body.replace(chr(10), chr(10) + '    ')}\n"
             "    return {'result': 'complete'}\n")

    async def run(answer: str) -> SandboxResult:
        return await box.run(crash, "verify_x", {"initial_db_path": "/t/i.db", "final_db_path": "/e/f.db",
                                                 "final_answer": answer}, timeout_s=1.0,
                             data={"/t/i.db": kept(template), "/e/f.db": template})

    assert (await run("")).value == {"result": "complete"}
    assert (await run("crash")).error is not None  # its worker is not kept
    assert (await run("")).value == {"result": "complete"}
    assert box.kept_stats == KeptStats(worker_hits=1, worker_sends=2)
    assert (await verify(box, kept(template), template)).value["initial"] == [5, 6]


async def test_a_new_server_is_sent_the_template_again(box: Sandbox, tmp_path: Path) -> None:
    template = db_bytes(tmp_path, [9], pad=4)
    assert (await verify(box, kept(template), template)).value["initial"] == [9]
    box.close()  # the server dies; the next verification starts another
    assert (await verify(box, kept(template), template)).value["initial"] == [9]
    assert box.kept_stats == KeptStats(worker_hits=0, worker_sends=2)  # the new server's worker holds nothing




async def test_a_queued_job_keeps_its_template_when_a_later_job_drops_it(tmp_path: Path) -> None:
    """One job at a time: while the first runs, the second waits in the server's queue for template a, and the
    third's needs b (the bound holds one template). Each is sent what its worker lacks when it gets one."""
    a, b, c = (db_bytes(tmp_path, [row], pad=8) for row in (1, 2, 3))
    sandbox = Sandbox(memory_mb=256, reuse=True, max_parallel=1, kept_bytes=len(a) + len(a) // 2)
    slow = ROWS.replace("    return {", "    import time\n    time.sleep(0.5)\n    return {")
    try:
        first, second, third = await asyncio.gather(verify(sandbox, kept(c), c, slow, initial="/t/c.db"),
                                                    verify(sandbox, kept(a), a, initial="/t/a.db"),
                                                    verify(sandbox, kept(b), b, initial="/t/b.db"))
        assert [r.value["initial"] if r.value else r.error for r in (first, second, third)] == [[3], [1], [2]]
        assert sandbox.kept_stats == KeptStats(worker_hits=0, worker_sends=3)
    finally:
        await sandbox.aclose()
