"""The rest of what a verifier can do, and how each way a job or the server can end is reported: real verifier
code through the real fork server (its children confined), and the server's own protocol driven over its pipes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import awm_runtime.verifiers as verifiers
from awm_runtime.isolation import HEADER, MAX_FRAME, encode, read_frame_fd
from awm_runtime.verifiers import Sandbox, find_function_name
from awm_runtime.verifiers import _fork_server as fork_server
from awm_runtime.verifiers import _outcome as outcome
from awm_runtime.verifiers._fork_server import _Child, child_reply, reply_frame
from awm_runtime.verifiers._restrict import module_proxies, restricted_builtins
from tests.awm_runtime.verifiers.conftest import readonly_db


@pytest.fixture
def db() -> Iterator[Path]:
    with readonly_db("awm-paths-", "CREATE TABLE t (a INTEGER)", "INSERT INTO t VALUES (1), (2)") as path:
        yield path


async def _run(box: Sandbox, body: str, db: Path, **kw: object) -> tuple[object, str | None, str | None]:
    code = "def verify_x(final_db_path, **rest):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    result = await box.run(code, "verify_x", {"final_db_path": str(db), "extra": 5}, timeout_s=10, **kw)  # type: ignore[arg-type]
    return result.value, result.error, result.fault


@pytest.mark.parametrize(("body", "value"), [
    ("return rest", {"extra": 5}),  # **kwargs takes every argument offered
    ("class C:\n    pass\nc = C()\nsetattr(c, 'v', 1)\nr = [hasattr(c, 'v'), getattr(c, 'v')]\ndelattr(c, 'v')\n"
     "return r + [hasattr(c, 'v'), getattr(c, 'v', 'gone')]", [True, 1, False, "gone"]),
    ("import sqlite3\nc = sqlite3.connect(':memory:')\nc.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1000)\n"
     "return c.execute('select 1').fetchone()[0]", 1),
    ("import sqlite3\nc = sqlite3.connect('file:' + final_db_path, uri=True)\n"
     "return c.execute('select count(*) from t').fetchone()[0]", 2),
    ("import sqlite3\nreturn sqlite3.connect('file::memory:', uri=True).execute('select 2').fetchone()[0]", 2),
    ("return '{:>{}}'.format('a', 3)", "  a"),
    ("import datetime\nreturn datetime.datetime.strptime('2026-11-28', '%Y-%m-%d').day", 28),
])
async def test_what_a_verifier_may_do(sandbox: Sandbox, db: Path, body: str, value: object) -> None:
    got, error, _ = await _run(sandbox, body, db)
    assert error is None and got == value


@pytest.mark.parametrize(("body", "expected"), [
    ("global __builtins__", "name '__builtins__' is not allowed"),
    ("def f():\n    nonlocal_x = 1\n    def g():\n        nonlocal super\n    return g\nreturn 1", "name 'super'"),
    ("from . import x", "relative imports are not allowed"),
    ("from json import *", "importing '*' is not allowed"),
    ("from json import _default_decoder", "importing '_default_decoder' is not allowed"),
    ("import os", "import of 'os' is not allowed"),
    ("match 1:\n    case int(format=f):\n        return f", "match pattern attribute 'format'"),
    ("match [1]:\n    case [*__builtins__]:\n        pass", "name '__builtins__' is not allowed"),
    ("return setattr(final_db_path, '_x', 1)", "attribute '_x' is not allowed"),
    ("import sqlite3\nsqlite3.connect(':memory:').load_extension('x')", "extensions is not allowed"),
    ("import sqlite3\nsqlite3.connect(':memory:').set_authorizer(None)", "changing the SQLite authorizer"),
    ("import os as o", "import of 'os' is not allowed"),
])
async def test_what_a_verifier_may_not_do(sandbox: Sandbox, db: Path, body: str, expected: str) -> None:
    got, error, fault = await _run(sandbox, body, db)
    assert got is None and error is not None and expected in error and fault == "verifier"


async def test_a_result_past_the_size_limit_ends_that_job(sandbox: Sandbox, db: Path) -> None:
    got, error, fault = await _run(sandbox, "return 'x' * (9 << 20)", db)
    assert got is None and error == "verifier result exceeded 8 MiB" and fault == "sandbox"
    assert (await _run(sandbox, "return 1", db))[0] == 1


async def test_a_job_whose_limits_cannot_be_set_never_runs(db: Path) -> None:
    """Confinement fails closed: limits the OS refuses mean the verifier's code does not run at all."""
    box = Sandbox(memory_mb=1 << 45)  # 2**65 bytes: no rlimit holds that
    try:
        got, error, fault = await _run(box, "return 1", db)
    finally:
        await box.aclose()
    assert got is None and fault == "sandbox" and (error or "").startswith("cannot confine the verifier: OverflowError")


async def test_unsafe_runs_with_rlimits_only(db: Path, tmp_path: Path) -> None:
    """--unsafe-no-sandbox: no namespaces, no Landlock: the verifier reads what this user can read."""
    elsewhere = tmp_path / "elsewhere.db"
    shutil.copyfile(db, elsewhere)
    box = Sandbox(memory_mb=256, unsafe=True)
    try:
        body = (f"import sqlite3\nreturn sqlite3.connect({str(elsewhere)!r})"
                ".execute('select count(*) from t').fetchone()")
        got, error, _ = await _run(box, body, db)
    finally:
        box.close()
        box.close()
    assert error is None and got == [2] and box.pid is None


async def test_a_server_that_does_not_start_is_the_sandboxs_fault(db: Path) -> None:
    box = Sandbox(module="awm_runtime.no_such_server")
    got, error, fault = await _run(box, "return 1", db)
    assert got is None and fault == "sandbox" and error == "the verifier server did not start (IncompleteReadError)"


def _server(*extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "awm_runtime.verifiers._fork_server", "--parent", str(os.getpid()),
                             "--max-children", "1", *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def test_the_server_reads_a_request_split_across_writes_and_ignores_an_unknown_cancel(db: Path) -> None:
    proc = _server()
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert read_frame_fd(proc.stdout.fileno())["ready"] is True
        job = encode({"id": 3, "code": "def verify_x():\n    return 'split'\n", "function": "verify_x", "kwargs": {},
                      "timeout_s": 10, "cpu_s": 10, "memory_mb": 256, "readable": []})
        proc.stdin.write(encode({"op": "cancel", "id": 99}) + job[:7])
        proc.stdin.flush()
        proc.stdin.write(job[7:])
        proc.stdin.flush()
        reply = read_frame_fd(proc.stdout.fileno())
        assert reply["id"] == 3 and reply["value"] == "split"
    finally:
        proc.stdin.close()
        assert proc.wait(30) == 0


def test_an_oversized_request_ends_the_server() -> None:
    proc = _server("--unsafe")
    assert proc.stdin is not None and proc.stdout is not None
    assert read_frame_fd(proc.stdout.fileno())["ready"] is True
    proc.stdin.write(HEADER.pack(MAX_FRAME + 1))
    proc.stdin.flush()
    assert read_frame_fd(proc.stdout.fileno()) is None and proc.wait(30) == 0
    proc.stdin.close()


def _child(**kw: object) -> _Child:
    return _Child(pid=1, job_id=4, deadline=0.0, started=0.0, timeout_s=1.0, cpu_s=2, **kw)  # type: ignore[arg-type]


def test_how_a_child_that_wrote_nothing_ended_is_its_reply() -> None:
    assert child_reply(_child(), signal.SIGKILL)["error"] == "verifier process was killed by SIGKILL"
    assert child_reply(_child(), signal.SIGXCPU)["error"] == "verifier exceeded its CPU limit (2s)"
    assert child_reply(_child(), 3 << 8)["error"] == "verifier process exited with status 3 without a result"
    assert outcome._signal_name(99) == "signal 99"


def test_a_result_the_server_cannot_encode_again_is_that_jobs_failure() -> None:
    """orjson reads 300 levels of nesting but writes no more than 255: the job fails, not the server."""
    body = b'{"ok": true, "value": ' + b"[" * 300 + b"]" * 300 + b"}"
    data = reply_frame(_child(buf=bytearray(body)), 0, 1.0)
    reply = read_frame_fd(_pipe(data))
    assert reply["ok"] is False and reply["fault"] == "verifier" and "not JSON" in reply["error"]


def _pipe(data: bytes) -> int:
    read_end, write_end = os.pipe()
    os.write(write_end, data)
    os.close(write_end)
    return read_end


def test_the_server_keeps_the_most_recently_used_compiled_verifiers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fork_server, "CODE_CACHE", 2)
    read_end, write_end = os.pipe()
    server = fork_server.Server(read_end, write_end, max_children=1, parent=os.getpid())
    try:
        for source in ("a", "b", "c"):
            server._keep_code(source, source.encode())
        assert list(server.compiled) == ["b", "c"]
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_guards_c_code_reaches_refuse_as_verifier_code_would() -> None:
    """What only C code can reach (it imports through the verifier's builtins): a non-string name, a relative
    import, a module that is not allowed."""
    imp = restricted_builtins(module_proxies())["__import__"]
    for args, message in (((5,), "non-string"), (("json", None, None, (), 1), "'json' is not allowed"),
                          (("os",), "'os' is not allowed")):
        with pytest.raises(ImportError, match=message):
            imp(*args)
    assert imp("collections.abc", None, None, ("Mapping",)).Mapping is not None


def test_the_package_loads_its_names_on_first_use() -> None:
    assert find_function_name("x = 1\ndef verify_b(a):\n    pass\n", "verify_default") == "verify_b"
    assert find_function_name("x = 1\n", "verify_default") == "verify_default"
    assert "Sandbox" in dir(verifiers)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        verifiers.nothing  # noqa: B018
