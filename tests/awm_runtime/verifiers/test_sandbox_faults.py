"""Whose fault a failed verification is: the verify call raised (the DB it was given), the verifier's
code, or the sandbox. The verdict and the episode's outcome follow from it (docs/runs.md, Outcomes)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from awm_runtime.verifiers import Sandbox
from tests.awm_runtime.verifiers.conftest import readonly_db


@pytest.fixture
def db() -> Iterator[Path]:
    """A DB an agent broke: it dropped the `t` table and wrote a NULL name into `u`."""
    with readonly_db("awm-fault-", "CREATE TABLE u (id INTEGER, name TEXT)", "INSERT INTO u VALUES (1, NULL)") as path:
        yield path


FUNCTION = "def verify_x(final_db_path):\n    import sqlite3\n    c = sqlite3.connect(final_db_path)\n"


@pytest.mark.parametrize(("code", "fault", "text"), [
    # Run time, on the DB: what an agent's actions can cause.
    (FUNCTION + "    return {'result': c.execute('SELECT COUNT(*) FROM t').fetchone()[0]}\n", "raised",
     "OperationalError: no such table: t"),
    (FUNCTION + "    name = c.execute('SELECT name FROM u').fetchone()[0]\n    return {'result': name.lower()}\n",
     "raised", "AttributeError"),
    (FUNCTION + "    assert c.execute('SELECT name FROM u').fetchone()[0] is not None\n", "raised", "AssertionError"),
    # The verifier's own code: it does not load, is refused, takes arguments it is not given, returns no JSON.
    ("def verify_x(final_db_path):\n    return {'result': 'complete'\n", "verifier", "SyntaxError"),
    ("import os\n" + FUNCTION + "    return {}\n", "verifier", "refused"),
    ("x = 1 / 0\n" + FUNCTION + "    return {}\n", "verifier", "ZeroDivisionError"),
    ("def verify_x(final_db_path, must_have):\n    return {}\n", "verifier", "must_have"),
    ("def verify_x(final_db_path):\n    a = []\n    a.append(a)\n    return a\n", "verifier", "not JSON"),
    ("def verify_y(final_db_path):\n    return {}\n", "verifier", "no function"),
    # The sandbox could not run it.
    ("def verify_x(final_db_path):\n    while True:\n        pass\n", "sandbox", "timed out"),
])
async def test_a_failed_verification_says_whose_fault_it_is(sandbox: Sandbox, db: Path, code: str, fault: str,
                                                             text: str) -> None:
    result = await sandbox.run(code, "verify_x", {"final_db_path": str(db)}, timeout_s=1.0)
    assert result.value is None and result.fault == fault and text in (result.error or ""), result


async def test_an_unreadable_db_and_a_dead_server_are_the_sandbox(sandbox: Sandbox, db: Path) -> None:
    code = FUNCTION + "    return {'result': 'complete'}\n"
    missing = str(db.parent / "gone.db")
    result = await sandbox.run(code, "verify_x", {"final_db_path": missing}, readable=(missing,))
    assert result.fault == "sandbox" and "cannot read" in (result.error or "")
    assert (await sandbox.run(code, "verify_x", {"final_db_path": str(db)})).fault is None
    pending = sandbox.run("def verify_x(final_db_path):\n    while True:\n        pass\n", "verify_x",
                          {"final_db_path": str(db)}, timeout_s=30.0)
    import asyncio

    task = asyncio.ensure_future(pending)
    await asyncio.sleep(0.5)
    assert sandbox.pid is not None
    os.kill(sandbox.pid, 9)
    result = await asyncio.wait_for(task, 30)
    assert result.fault == "sandbox" and "stopped" in (result.error or "")
