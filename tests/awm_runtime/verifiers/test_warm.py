"""Kept verifier workers (`Sandbox(reuse=True)`): one confined process per verifier code serves many verifications,
given each job's DBs as bytes. What one verification does never reaches another verifier's, a worker that failed
is replaced with only its own job affected, cancellation leaves nothing behind, and the server that runs them is
this checkout's (`python -I` would otherwise import whichever checkout the editable install points to)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import AsyncIterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.isolation import module_code
from awm_runtime.verifiers import Sandbox, SandboxResult

_names = count()
COUNT = ("import sqlite3\n"
         "def verify_x(final_db_path, initial_db_path, final_answer=''):\n"
         "    c = sqlite3.connect(f'file:{final_db_path}?mode=ro', uri=True)\n"
         "    return {'result': 'complete', 'n': c.execute('SELECT count(*) FROM t').fetchone()[0]}\n")


def db_bytes(rows: int, tmp: Path) -> bytes:
    path = tmp / f"db{next(_names)}.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(rows)])
    conn.commit()
    conn.close()
    return path.read_bytes()


@pytest.fixture
async def kept() -> AsyncIterator[Sandbox]:
    box = Sandbox(memory_mb=256, reuse=True)
    yield box
    await box.aclose()


async def verify(box: Sandbox, code: str, final: bytes, *, name: str = "/episodes/a/final.db",
                 timeout_s: float = 10.0, cpu_s: float | None = None, extra: dict[str, bytes] | None = None,
                 **kwargs: Any) -> SandboxResult:
    data = {name: final, "/templates/initial.db": final, **(extra or {})}
    return await box.run(code, "verify_x", {"final_db_path": name, "initial_db_path": "/templates/initial.db",
                                            "final_answer": "", **kwargs}, timeout_s=timeout_s, cpu_s=cpu_s,
                         data=data)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def workers(box: Sandbox) -> set[int]:
    """The server's live processes: kept workers, once a fork killed after its reply has died."""
    alive = {pid for pid in box.served_by()[1:] if _alive(pid)}
    for _ in range(50):
        time.sleep(0.02)
        now = {pid for pid in box.served_by()[1:] if _alive(pid)}
        if now == alive:
            break
        alive = now
    return alive


def _exists(path: str) -> bool:
    return os.path.exists(path)


def _world_readable(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.parent.chmod(0o755)
    return path


async def settled(box: Sandbox, expected: set[int]) -> bool:
    """Whether the server's live processes come to `expected` within 20 s (a loaded machine's exits are slow)."""
    for _ in range(400):
        if workers(box) == expected:
            return True
        await asyncio.sleep(0.05)
    return False


async def test_one_worker_serves_a_code_many_times_each_on_its_own_bytes(kept: Sandbox, tmp_path: Path) -> None:
    results = [await verify(kept, COUNT, db_bytes(n, tmp_path)) for n in (1, 2, 3)]
    assert [r.value for r in results] == [{"result": "complete", "n": n} for n in (1, 2, 3)]
    assert len(workers(kept)) == 1  # the same process each time: no fork a verification
    other = COUNT.replace("'complete'", "'others'")
    assert (await verify(kept, other, db_bytes(1, tmp_path))).value == {"result": "others", "n": 1}
    assert len(workers(kept)) == 2  # another code, another worker


async def test_concurrent_verifications_each_see_their_own_db(kept: Sandbox, tmp_path: Path) -> None:
    blobs = {n: db_bytes(n, tmp_path) for n in range(1, 13)}
    results = await asyncio.gather(*(verify(kept, COUNT, blobs[n], name=f"/episodes/{n}/final.db")
                                     for n in range(1, 13)))
    assert [r.value["n"] for r in results] == list(range(1, 13))


@pytest.mark.parametrize(("body", "expected"), [
    # Nothing but the job's own bytes opens: no other file, not /proc, not the same DB by another spelling.
    ("sqlite3.connect('/etc/passwd').execute('SELECT 1')", "unable to open database file"),
    ("sqlite3.connect('/proc/self/environ').execute('SELECT 1')", "unable to open database file"),
    ("sqlite3.connect('/episodes/other/final.db').execute('SELECT 1')", "unable to open database file"),
    ("sqlite3.connect(final_db_path).execute('DELETE FROM t')", "readonly database"),
    ("c = sqlite3.connect(final_db_path)\n    c.execute('PRAGMA query_only = 0')", "not authorized"),
    ("sqlite3.connect(final_db_path).execute(\"ATTACH '/episodes/other/final.db' AS o\")", "not authorized"),
    ("sqlite3.connect(':memory:').execute(\"VACUUM INTO '/tmp/awm-kept-escape.db'\")", ""),
    ("import socket", "import of 'socket' is not allowed"),
    ("import os\n    os.fork()", "import of 'os' is not allowed"),
    ("return ().__class__", "attribute '__class__' is not allowed"),
])
async def test_a_kept_worker_reads_no_file_and_writes_nothing(kept: Sandbox, tmp_path: Path, body: str,
                                                               expected: str) -> None:
    code = f"import sqlite3\ndef verify_x(final_db_path, initial_db_path, final_answer=''):\n    {body}\n"
    result = await verify(kept, code, db_bytes(2, tmp_path))
    assert result.error is not None and expected in result.error, result
    assert not _exists("/tmp/awm-kept-escape.db")


POISON = ("import sqlite3, json, random\n"
          "def verify_x(final_db_path, initial_db_path, final_answer=''):\n"
          "    sqlite3.connect = lambda *a, **k: None\n"
          "    sqlite3.Connection.execute = lambda *a, **k: None\n"
          "    json.dumps = lambda *a, **k: 'poisoned'\n"
          "    random.seed(0)\n"
          "    return {'result': 'complete'}\n")


async def test_poison_left_by_one_verifier_never_reaches_another(kept: Sandbox, tmp_path: Path) -> None:
    data = db_bytes(2, tmp_path)
    assert (await verify(kept, POISON, data)).value == {"result": "complete"}
    checker = COUNT.replace("return {", "import json\n    return {'j': json.dumps(1), ")
    for _ in range(3):
        assert (await verify(kept, checker, data)).value == {"j": "1", "result": "complete", "n": 2}
    assert len(workers(kept)) == 2


async def test_each_run_of_a_code_starts_from_fresh_module_globals(kept: Sandbox, tmp_path: Path) -> None:
    code = ("seen = []\n"
            "def verify_x(final_db_path, initial_db_path, final_answer=''):\n"
            "    seen.append(1)\n"
            "    return {'result': 'complete', 'seen': len(seen)}\n")
    data = db_bytes(1, tmp_path)
    assert [(await verify(kept, code, data)).value["seen"] for _ in range(3)] == [1, 1, 1]
    assert len(workers(kept)) == 1


@pytest.mark.parametrize(("body", "cpu_s", "timeout_s", "expected"), [
    ("while True:\n        pass", None, 1.0, "verifier timed out after 1s"),
    ("while True:\n        pass", 1, 30.0, "verifier exceeded its CPU limit (1s)"),
    ("x = bytearray(1 << 30)\n    return len(x)", None, 10.0, "verifier exceeded its memory limit (256 MiB)"),
    ("x = []\n    while True:\n        x.append(' ' * 4096)", None, 20.0, "verifier exceeded its memory limit"),
    ("return 'x' * (9 << 20)", None, 10.0, "verifier result exceeded 8 MiB"),
    ("a = []\n    a.append(a)\n    return a", None, 10.0, "verifier returned a value that is not JSON"),
    ("raise SystemExit(3)", None, 10.0, "SystemExit: 3"),
])
async def test_a_failed_worker_is_replaced_and_only_its_job_is_affected(
        kept: Sandbox, tmp_path: Path, body: str, cpu_s: float | None, timeout_s: float, expected: str) -> None:
    data = db_bytes(2, tmp_path)
    bad = f"def verify_x(final_db_path, initial_db_path, final_answer=''):\n    {body}\n"
    slow_ok = COUNT.replace("    return", "    import time\n    time.sleep(0.3)\n    return")
    first = await verify(kept, bad, data, timeout_s=timeout_s, cpu_s=cpu_s)
    assert first.error is not None and expected in first.error and first.fault in ("sandbox", "verifier"), first
    assert await settled(kept, set())  # the failed worker is gone (a big one takes a moment to exit)
    again = await verify(kept, bad, data, timeout_s=timeout_s, cpu_s=cpu_s)
    bystander = await verify(kept, slow_ok, data)
    assert again.error is not None and expected in again.error
    assert bystander.value == {"result": "complete", "n": 2}


async def test_a_bystander_in_flight_completes_while_a_worker_is_killed(kept: Sandbox, tmp_path: Path) -> None:
    data = db_bytes(2, tmp_path)
    slow_ok = COUNT.replace("    return", "    import time\n    time.sleep(1.5)\n    return")
    hung = "def verify_x(final_db_path, initial_db_path, final_answer=''):\n    while True:\n        pass\n"
    ok, bad = await asyncio.gather(verify(kept, slow_ok, data, timeout_s=30), verify(kept, hung, data, timeout_s=1))
    assert ok.value == {"result": "complete", "n": 2}
    assert bad.error == "verifier timed out after 1s"


async def test_a_verification_cancelled_mid_run_leaves_no_process(kept: Sandbox, tmp_path: Path) -> None:
    data = db_bytes(2, tmp_path)
    assert (await verify(kept, COUNT, data)).value is not None
    idle = workers(kept)
    hung = "def verify_x(final_db_path, initial_db_path, final_answer=''):\n    while True:\n        pass\n"
    task = asyncio.ensure_future(verify(kept, hung, data, timeout_s=60))
    for _ in range(100):
        await asyncio.sleep(0.05)
        if len(workers(kept)) == 2:
            break
    busy = workers(kept) - idle
    assert len(busy) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await settled(kept, idle)  # the server kills it at once
    (pid,) = busy
    assert not _exists(f"/proc/{pid}")
    assert (await verify(kept, COUNT, data)).value == {"result": "complete", "n": 2}


async def test_large_dbs_go_to_a_fork(kept: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job without bytes (the Verifier sends none past REUSE_MAX_BYTES) runs in a fork, reading its files."""
    path = _world_readable(tmp_path / "big.db", db_bytes(3, tmp_path))
    result = await kept.run(COUNT, "verify_x", {"final_db_path": str(path), "initial_db_path": str(path)},
                            readable=(str(path),))
    assert result.value == {"result": "complete", "n": 3}
    assert await settled(kept, set())  # the fork is gone, and no worker was kept


def test_the_server_runs_this_checkout() -> None:
    import awm_runtime

    root = os.path.dirname(os.path.dirname(os.path.abspath(awm_runtime.__file__)))
    assert f"sys.path.insert(0, {root!r})" in module_code("awm_runtime.verifiers._fork_server")


async def test_a_worker_killed_mid_job_gives_that_job_the_servers_words(kept: Sandbox, tmp_path: Path) -> None:
    """The job's bytes and result go straight between the runtime and the worker (`_direct`): a worker that dies
    mid-job still gets its job the server's verdict, the runtime closes its socket, and the next job gets a new
    worker (sent its socket once, by SCM_RIGHTS): the runtime's descriptors stay as many as before."""
    import signal

    data = db_bytes(2, tmp_path)
    assert (await verify(kept, COUNT, data)).value is not None
    idle, fds = workers(kept), len(os.listdir("/proc/self/fd"))
    hung = "def verify_x(final_db_path, initial_db_path, final_answer=''):\n    while True:\n        pass\n"
    for _ in range(3):
        task = asyncio.ensure_future(verify(kept, hung, data, timeout_s=60))
        for _ in range(200):
            await asyncio.sleep(0.05)
            if len(workers(kept) - idle) == 1:
                break
        (pid,) = workers(kept) - idle
        os.kill(pid, signal.SIGKILL)
        result = await asyncio.wait_for(task, 30)
        assert result.error == "verifier process was killed by SIGKILL" and result.fault == "sandbox", result
    assert await settled(kept, idle)
    assert (await verify(kept, COUNT, data)).value == {"result": "complete", "n": 2}
    assert len(os.listdir("/proc/self/fd")) == fds


async def test_a_result_never_reaches_another_job(kept: Sandbox, tmp_path: Path) -> None:
    """Many jobs of one code over few workers, each answered with its own DB's count: a result goes only to the job
    whose id it carries."""
    blobs = {n: db_bytes(n, tmp_path) for n in range(1, 9)}
    for _ in range(3):
        results = await asyncio.gather(*(verify(kept, COUNT, blobs[n], name=f"/episodes/{n}/final.db")
                                         for n in (*range(1, 9), *range(8, 0, -1))))
        assert [r.value["n"] for r in results] == [*range(1, 9), *range(8, 0, -1)]


async def test_a_job_sent_to_an_idle_worker_that_has_just_ended_goes_to_a_new_one(kept: Sandbox,
                                                                                   tmp_path: Path) -> None:
    """The runtime holds its idle worker and sends it the next job at once (`run`); a worker that ended while
    idle, before the runtime read its EOF, is replaced by the server (the `run` becomes a lease) and the job is
    sent again, to the new worker."""
    import signal

    data = db_bytes(3, tmp_path)
    assert (await verify(kept, COUNT, data)).value is not None
    (pid,) = workers(kept)
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)  # noqa: ASYNC251  the server reaps it; this loop must not turn (it still holds the worker)
    assert (await verify(kept, COUNT, data)).value == {"result": "complete", "n": 3}
    assert len(workers(kept)) == 1 and pid not in workers(kept)


HANG_ON_3 = ("import sqlite3\n"
             "def verify_x(final_db_path, initial_db_path, final_answer=''):\n"
             "    n = sqlite3.connect(final_db_path).execute('SELECT count(*) FROM t').fetchone()[0]\n"
             "    while n == 3:\n"
             "        pass\n"
             "    return {'result': 'complete', 'n': n}\n")


@pytest.mark.parametrize(("cpu_s", "timeout_s", "expected"), [
    (None, 1.0, "verifier timed out after 1s"),
    (1, 30.0, "verifier exceeded its CPU limit (1s)"),
])
async def test_a_job_given_to_an_idle_worker_keeps_its_clock_and_cpu_watchdog(
        kept: Sandbox, tmp_path: Path, cpu_s: float | None, timeout_s: float, expected: str) -> None:
    """A job sent straight to an idle worker is only noted to the server (`run` on the notes pipe, read when it
    next looks): its timeout and CPU limit still hold, with the same words, and the worker is replaced."""
    assert (await verify(kept, HANG_ON_3, db_bytes(2, tmp_path))).value == {"result": "complete", "n": 2}
    (pid,) = workers(kept)
    hung = await verify(kept, HANG_ON_3, db_bytes(3, tmp_path), timeout_s=timeout_s, cpu_s=cpu_s)
    assert hung.error == expected and hung.fault == "sandbox", hung
    assert await settled(kept, set()) and not _exists(f"/proc/{pid}")
    assert (await verify(kept, HANG_ON_3, db_bytes(4, tmp_path))).value == {"result": "complete", "n": 4}


async def test_a_job_given_to_an_idle_worker_and_cancelled_leaves_no_process(kept: Sandbox, tmp_path: Path) -> None:
    assert (await verify(kept, HANG_ON_3, db_bytes(2, tmp_path))).value is not None
    (pid,) = workers(kept)
    task = asyncio.ensure_future(verify(kept, HANG_ON_3, db_bytes(3, tmp_path), timeout_s=60))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await settled(kept, set()) and not _exists(f"/proc/{pid}")
    assert (await verify(kept, HANG_ON_3, db_bytes(1, tmp_path))).value == {"result": "complete", "n": 1}


def _wakeups(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("voluntary_ctxt_switches"))


async def test_jobs_in_a_kept_worker_do_not_wake_the_server(kept: Sandbox, tmp_path: Path) -> None:
    """The server learns of a kept worker's jobs from notes it reads when it looks (every `NOTES_POLL_S`), not from
    a request that wakes it for each: it wakes at most once a poll, not once a job."""
    from awm_runtime.verifiers._fork_server import NOTES_POLL_S

    data = db_bytes(2, tmp_path)
    assert (await verify(kept, COUNT, data)).value is not None
    server = kept.served_by()[0]
    jobs, before, started = 200, _wakeups(server), time.monotonic()
    for _ in range(jobs):
        assert (await verify(kept, COUNT, data)).value == {"result": "complete", "n": 2}
    polls = (time.monotonic() - started) / NOTES_POLL_S + 1
    assert _wakeups(server) - before <= polls + 5  # it was once a job (200 here), whatever the time they took


async def test_a_full_notes_pipe_sends_every_later_note_on_stdin_in_order(kept: Sandbox, tmp_path: Path) -> None:
    """Notes the server has not read yet fill the pipe: that note and every later one go on the server's stdin
    (read after the notes already in the pipe), and jobs go on as before."""
    from awm_runtime.isolation import encode

    data = db_bytes(2, tmp_path)
    assert (await verify(kept, COUNT, data)).value is not None
    idle = workers(kept)
    nothing = encode({"op": "done", "id": -1, "clean": True})  # no job of the server's: changes nothing
    for _ in range(1 << 20):
        kept._note(nothing)
        if kept._notes_full:
            break
    assert kept._notes_full
    for n in (1, 2, 3):
        assert (await verify(kept, COUNT, db_bytes(n, tmp_path))).value == {"result": "complete", "n": n}
    assert workers(kept) == idle  # the same worker, kept idle between its jobs as before
