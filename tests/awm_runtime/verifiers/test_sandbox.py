"""The verifier sandbox: a pre-forked server, one confined child per job; escapes and breaches are refused.

Every test that takes the `sandbox` fixture runs twice: a fork per job, and kept workers (`reuse=True`, the
DBs sent as bytes), which must refuse the same escapes with the same words."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from awm_runtime.verifiers import Sandbox
from tests.awm_runtime.isolation.conftest import assert_below_the_runtime
from tests.awm_runtime.verifiers.conftest import readonly_db


@pytest.fixture
def db() -> Iterator[Path]:
    """A DB where the sandbox (nobody, when tests run as root) can read it, read-only as in a world."""
    with readonly_db("awm-sbx-", "CREATE TABLE t (a INTEGER)", "INSERT INTO t VALUES (1), (2)") as path:
        yield path


@pytest.fixture(params=["fork", "kept"])
async def sandbox(request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
    box = Sandbox(memory_mb=256, reuse=request.param == "kept")
    yield box
    await box.aclose()


def _bytes_of(db: Path) -> dict[str, bytes]:
    return {str(db): db.read_bytes()}


async def run(box: Sandbox, body: str, db: Path, *, timeout_s: float = 10.0, cpu_s: float | None = None) -> tuple:
    code = "def verify_x(final_db_path, initial_db_path=None, final_answer=''):\n" + "".join(
        f"    {line}\n" for line in body.splitlines())
    result = await box.run(code, "verify_x", {"final_db_path": str(db), "initial_db_path": str(db),
                                              "final_answer": ""}, timeout_s=timeout_s, cpu_s=cpu_s,
                           data=_bytes_of(db))  # used by kept workers only
    return result.value, result.error


async def test_a_verifier_reads_the_db_with_the_usual_modules(sandbox: Sandbox, db: Path) -> None:
    value, error = await run(sandbox, (
        "import sqlite3, json, re\nfrom datetime import datetime\nfrom collections import Counter\n"
        "c = sqlite3.connect(f'file:{final_db_path}?mode=ro', uri=True)\nc.row_factory = sqlite3.Row\n"
        "rows = [dict(r) for r in c.execute('SELECT a FROM t')]\n"
        "day = datetime.strptime('2024-01-02', '%Y-%m-%d').day\n"
        "return {'result': 'complete', 'rows': rows, 'n': Counter('aab')['a'], 'day': day,"
        " 'm': bool(re.match('a', 'a')), 'j': json.dumps([1])}"), db)
    assert error is None
    assert value == {"result": "complete", "rows": [{"a": 1}, {"a": 2}], "n": 2, "day": 2, "m": True, "j": "[1]"}


@pytest.mark.parametrize(("body", "expected"), [
    ("return open('/etc/passwd').read()", "name 'open' is not defined"),
    ("return eval('1 + 1')", "name 'eval' is not defined"),
    ("exec('x = 1')", "name 'exec' is not defined"),
    ("return compile('1', 'f', 'eval')", "name 'compile' is not defined"),
    ("import os\nreturn os.listdir('/')", "import of 'os' is not allowed"),
    ("import subprocess\nreturn subprocess.run(['id'])", "import of 'subprocess' is not allowed"),
    ("from os import system", "import of 'os' is not allowed"),
    ("import importlib", "import of 'importlib' is not allowed"),
    ("return __import__('os')", "name '__import__' is not allowed"),
    ("return ().__class__.__base__.__subclasses__()", "attribute '__subclasses__' is not allowed"),
    ("return getattr((), '__cl' + 'ass__')", "attribute '__class__' is not allowed"),
    ("g = (x for x in [1])\nreturn g.gi_frame", "attribute 'gi_frame' is not allowed"),
    ("return type(1).mro()", "attribute 'mro' is not allowed"),
    ("import collections\nreturn collections._sys", "attribute '_sys' is not allowed"),
    ("import typing\nreturn typing.get_type_hints", "has no attribute 'get_type_hints'"),
    ("import json\nreturn json.decoder", "has no attribute 'decoder'"),
    ("import sqlite3\nc = sqlite3.connect(':memory:')\nc.enable_load_extension(True)", "extensions is not allowed"),
    # Routes found in review: match patterns read attributes, super() reaches the base class, format strings
    # walk attributes and indexes, frames hide in coroutines and tracebacks, str subclasses lie about names.
    ("match ():\n    case object(__class__=t):\n        return t", "match pattern attribute '__class__'"),
    ("match 1:\n    case __builtins__:\n        pass", "name '__builtins__' is not allowed"),
    ("match {}:\n    case {**__builtins__}:\n        pass", "name '__builtins__' is not allowed"),
    ("import sqlite3\nc = sqlite3.connect(final_db_path)\nsuper(sqlite3.Connection, c).set_authorizer(None)",
     "name 'super' is not allowed"),
    ("return '{0.__globals__}'.format(verify_x)", "walks attributes or indexes"),
    ("return '{0[0]}'.format([1])", "walks attributes or indexes"),
    ("return '{0:{1.__class__}}'.format(1, 2)", "walks attributes or indexes"),
    ("return '{a.__class__}'.format_map({'a': 1})", "walks attributes or indexes"),
    ("return str.format('{0.__class__}', 1)", "walks attributes or indexes"),
    ("f = str.format\nreturn f('{0.real}', 1)", "walks attributes or indexes"),
    ("return getattr('{0.__class__}', 'format')(1)", "walks attributes or indexes"),
    ("import collections\nreturn collections.UserString('{0.__class__}').format(1)", "allowed only on strings"),
    ("class S(str):\n    def startswith(self, *a):\n        return False\nreturn getattr((), S('__class__'))",
     "is not allowed in a verifier"),
    ("async def f():\n    pass\nreturn f().cr_frame", "attribute 'cr_frame' is not allowed"),
    ("try:\n    1 / 0\nexcept Exception as e:\n    return e.with_traceback", "attribute 'with_traceback'"),
    ("try:\n    1 / 0\nexcept Exception as __builtins__:\n    pass", "name '__builtins__' is not allowed"),
    ("import json as __builtins__", "name '__builtins__' is not allowed"),
    ("import sqlite3\nc = sqlite3.connect(':memory:')\nc.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 10)",
     "attached-database limit"),
])
async def test_escapes_are_refused(sandbox: Sandbox, db: Path, body: str, expected: str) -> None:
    value, error = await run(sandbox, body, db)
    assert value is None and error is not None and expected in error


@pytest.mark.parametrize("body", [
    "import sqlite3\nc = sqlite3.connect(final_db_path)\nc.execute('DELETE FROM t')\nc.commit()",
    # Around the read-only wrapper: a Connection constructed directly. The OS still says no.
    "import sqlite3\nc = sqlite3.Connection(final_db_path)\nc.execute('DELETE FROM t')\nc.commit()",
    "import sqlite3\nc = sqlite3.connect(final_db_path)\nc.execute(\"ATTACH 'x.db' AS x\")",
])
async def test_the_db_cannot_be_written(sandbox: Sandbox, db: Path, body: str) -> None:
    _, error = await run(sandbox, body, db)
    assert error is not None and ("readonly database" in error or "authorization denied" in error
                                  or "not authorized" in error)
    assert sqlite3.connect(db).execute("SELECT count(*) FROM t").fetchone() == (2,)


async def test_format_without_attribute_walks_still_works(sandbox: Sandbox, db: Path) -> None:
    value, error = await run(sandbox, "return {'result': '{0}-{name:>3}'.format(1, name='a'), "
                                      "'m': '{x}'.format_map({'x': 2}), 'u': str.format('{}', 3)}", db)
    assert error is None and value == {"result": "1-  a", "m": "2", "u": "3"}


async def test_vacuum_into_writes_no_file(sandbox: Sandbox, db: Path) -> None:
    target = Path(tempfile.gettempdir()) / f"awm-vacuum-{os.getpid()}.db"
    _, error = await run(sandbox, f"import sqlite3\nc = sqlite3.connect(final_db_path)\n"
                                  f"c.execute(\"VACUUM INTO '{target}'\")", db)
    assert error is not None and not target.exists()


async def test_no_new_files(sandbox: Sandbox, db: Path, tmp_path: Path) -> None:
    target = Path(tempfile.gettempdir()) / f"awm-escape-{os.getpid()}.db"
    body = f"import sqlite3\nc = sqlite3.connect({str(target)!r})\nc.execute('CREATE TABLE z (a)')"
    _, error = await run(sandbox, body, db)
    assert error is not None and not target.exists()


async def test_limits_end_runaway_verifiers(sandbox: Sandbox, db: Path) -> None:
    _, error = await run(sandbox, "x = bytearray(1 << 30)\nreturn len(x)", db)
    assert error == "verifier exceeded its memory limit (256 MiB)"
    _, error = await run(sandbox, "while True:\n    pass", db, timeout_s=10, cpu_s=1)
    assert error == "verifier exceeded its CPU limit (1s)"
    _, error = await run(sandbox, "import time\ntime.sleep(60)", db, timeout_s=1)
    assert error == "verifier timed out after 1s"
    value, error = await run(sandbox, "return {'result': 'complete'}", db)  # the server is fine afterwards
    assert value == {"result": "complete"}


@pytest.mark.parametrize(("body", "expected"), [
    ("return 1 / 0", "ZeroDivisionError: division by zero (verifier line 2)"),
    ("raise SystemExit(3)", "SystemExit: 3 (verifier line 2)"),
    ("a = []\na.append(a)\nreturn a", "verifier returned a value that is not JSON"),
])
async def test_verifier_failures_are_reported_as_data(sandbox: Sandbox, db: Path, body: str, expected: str) -> None:
    _, error = await run(sandbox, body, db)
    assert error is not None and expected in error


async def test_missing_function_and_syntax_error(sandbox: Sandbox, db: Path) -> None:
    result = await sandbox.run("def other():\n    return 1\n", "verify_x", {})
    assert result.error == "refused: verifier defines no function 'verify_x'"
    result = await sandbox.run("def verify_x(:\n", "verify_x", {})
    assert result.error is not None and result.error.startswith("SyntaxError") and "line 1" in result.error


async def test_parallel_jobs_and_a_dead_server_recovers(sandbox: Sandbox, db: Path) -> None:
    results = await asyncio.gather(*(run(sandbox, f"return {i}", db) for i in range(12)))
    assert [v for v, _ in results] == list(range(12))
    slow = asyncio.ensure_future(run(sandbox, "import time\ntime.sleep(30)", db, timeout_s=20))
    await asyncio.sleep(0.5)
    assert sandbox.pid is not None
    os.kill(sandbox.pid, 9)
    value, error = await asyncio.wait_for(slow, 10)
    assert value is None and error == "the verifier server stopped while verifying"
    assert (await run(sandbox, "return 'again'", db))[0] == "again"


async def test_server_environment_has_no_secrets(monkeypatch: pytest.MonkeyPatch, db: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    box = Sandbox()
    try:
        await run(box, "return 1", db)
        assert box.pid is not None
        with open(f"/proc/{box.pid}/environ", "rb") as fh:  # noqa: ASYNC230 - procfs, instant
            environ = fh.read()
        assert b"OPENAI_API_KEY" not in environ and b"sk-must-not-leak" not in environ
    finally:
        await box.aclose()


async def test_the_verifier_server_runs_below_the_runtime(sandbox: Sandbox, db: Path) -> None:
    """Verifier jobs (forks of the server) yield the CPU to the runtime's event loop."""
    assert (await run(sandbox, "return 1", db))[0] == 1
    assert sandbox.pid is not None
    assert_below_the_runtime(sandbox.pid)


CONFINED_CHILD = """
import ctypes, os, socket, sys
from awm_runtime.isolation import Confinement, Limits, confine

def capabilities():
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    assert ctypes.CDLL(None, use_errno=True).capget(header, data) == 0
    return data[0] | data[3] << 32, data[1] | data[4] << 32

target = sys.argv[1]
code = 0
confine(Confinement(Limits(memory_mb=512, cpu_s=5)))
if capabilities() != (0, 0):
    code |= 1
try:
    os.fork()
    code |= 2
except OSError:
    pass
try:
    with open(target, "w") as fh:
        fh.write("x" * 10)
    code |= 4
except OSError:
    pass
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    code |= 8
except OSError:
    pass
os._exit(code)
"""


def test_confine_forbids_processes_files_sockets_and_capabilities(tmp_path: Path) -> None:
    """The OS layer on its own: after confine(), fork, file writes and sockets fail, and no capability is
    left (root keeps uid 0 but loses every capability, so the limits and file modes bind). The child is a
    fresh interpreter, as world workers and verifier jobs descend from exec'd zygotes."""
    target = Path(tempfile.gettempdir()) / f"awm-confine-{os.getpid()}"
    proc = subprocess.run([sys.executable, "-c", CONFINED_CHILD, str(target)], capture_output=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, (proc.returncode, proc.stderr.decode()[-2000:])
    assert not target.exists()


async def test_time_spent_queued_is_not_charged_to_a_verifier(monkeypatch: pytest.MonkeyPatch) -> None:
    """One child slot, four jobs of 0.45 s, a 1 s timeout: the last waits ~1.35 s in the queue and still
    gets its verdict (the server times each job from its own start)."""
    from awm_runtime.verifiers import _sandbox

    monkeypatch.setattr(_sandbox, "GRACE_S", 0.2)
    code = ("def verify_task_completion(final_answer=''):\n"
            "    import time\n"
            "    time.sleep(0.45)\n"
            "    return {'result': 'others'}\n")
    box = Sandbox(max_parallel=1, memory_mb=256)
    try:
        await box.run("def verify_task_completion():\n    return 1\n", "verify_task_completion", {})  # server up
        started = asyncio.get_running_loop().time()
        one = await box.run(code, "verify_task_completion", {}, timeout_s=1.0)
        single = asyncio.get_running_loop().time() - started
        assert one.error is None and single < 1.0
        results = await asyncio.gather(*(box.run(code, "verify_task_completion", {}, timeout_s=1.0)
                                         for _ in range(4)))
    finally:
        await box.aclose()
    assert [r.error for r in results] == [None] * 4
    assert all(r.value["result"] == "others" for r in results)


@pytest.mark.parametrize("reuse", [False, True])
async def test_a_server_that_does_not_answer_fails_the_verification_after_its_grace(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, reuse: bool) -> None:
    """The server enforces each job's timeout; if it cannot (stopped here), the runtime gives up `GRACE_S` later
    with a `sandbox` failure, forgets the job (its late reply is dropped), and the next verification is served."""
    from awm_runtime.verifiers import _sandbox

    monkeypatch.setattr(_sandbox, "GRACE_S", 0.3)
    db = tmp_path / "f.db"
    sqlite3.connect(db).close()
    data: dict[str, bytes] | None = {str(db): db.read_bytes()} if reuse else None
    code = "def verify_task_completion(final_db_path):\n    return 7\n"
    box = Sandbox(memory_mb=256, reuse=reuse)
    try:
        assert (await box.run(code, "verify_task_completion", {"final_db_path": str(db)}, data=data)).value == 7
        assert box.pid is not None
        os.kill(box.pid, signal.SIGSTOP)
        try:
            if reuse:  # the idle kept worker this process holds answers without the server (its `run` waits)
                held = await box.run(code, "verify_task_completion", {"final_db_path": str(db)}, data=data)
                assert (held.value, held.error) == (7, None)
            # another code needs a new worker, which only the server can give
            hung = await box.run(code.replace("7", "8"), "verify_task_completion", {"final_db_path": str(db)},
                                 timeout_s=0.2, data=data)
        finally:
            os.kill(box.pid, signal.SIGCONT)
        assert (hung.value, hung.fault, hung.error) == (None, "sandbox", "the verifier server failed (TimeoutError)")
        assert not box._pending
        again = await box.run(code, "verify_task_completion", {"final_db_path": str(db)}, data=data)
        assert (again.value, again.error) == (7, None)
    finally:
        await box.aclose()


async def test_a_cancelled_verification_frees_its_slot_and_its_reply_is_dropped() -> None:
    """The caller stops waiting (its episode was cancelled): the server kills the job, so the next job in the
    only slot starts at once, and gets its own reply."""
    box = Sandbox(max_parallel=1, memory_mb=256)
    loop = asyncio.get_running_loop()
    try:
        await box.run("def verify_task_completion():\n    return 1\n", "verify_task_completion", {})
        slow = asyncio.create_task(box.run("def verify_task_completion():\n    import time\n    time.sleep(30)\n"
                                           "    return 'late'\n", "verify_task_completion", {}, timeout_s=60))
        await asyncio.sleep(0.5)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        started = loop.time()
        quick = await box.run("def verify_task_completion():\n    return 7\n", "verify_task_completion", {},
                              timeout_s=20)
        assert quick.value == 7 and quick.error is None and loop.time() - started < 10
    finally:
        await box.aclose()
