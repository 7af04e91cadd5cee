"""The verifier server outlives every result a job can produce: one that cannot be encoded (a lone surrogate,
an integer past 64 bits, a 300-deep list) or bytes that are no reply at all fail that job, with a reason, while
a bystander verification in flight at the same time completes and the server keeps its pid."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awm_runtime.isolation import decode
from awm_runtime.isolation._frames import HEADER
from awm_runtime.verifiers import Sandbox
from awm_runtime.verifiers._fork_server import _Child, reply_frame
from tests.awm_runtime.verifiers.conftest import readonly_db


@pytest.fixture
def db() -> Iterator[Path]:
    with readonly_db("awm-fuzz-", "CREATE TABLE t (id INTEGER)") as path:
        yield path


def _frame(buf: bytes, killed: str = "") -> dict[str, Any]:
    child = _Child(pid=1, job_id=7, deadline=0.0, started=0.0, timeout_s=1.0, cpu_s=1, buf=bytearray(buf),
                   killed=killed)
    data = reply_frame(child, 0, 1.5)
    (size,) = HEADER.unpack_from(data)
    assert size == len(data) - HEADER.size
    reply = decode(data[HEADER.size:])
    assert isinstance(reply, dict) and reply["id"] == 7 and isinstance(reply["ok"], bool), reply
    return reply


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_from_a_child_make_a_readable_reply(buf: bytes) -> None:
    reply = _frame(buf)
    if not reply["ok"]:
        assert reply["error"]


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(st.characters(codec=None, categories=None)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(JSONISH)
def test_whatever_json_a_child_writes_the_server_can_forward(value: Any) -> None:
    import json

    buf = json.dumps({"ok": True, "value": value}).encode()  # what an escaped child could write, surrogates too
    reply = _frame(buf)
    assert reply["ok"] or "not JSON" in reply["error"] or "unreadable" in reply["error"]


def _literal(value: Any) -> str:
    """Python source for `value` that the restricted verifier can evaluate (nan and inf included)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _verifier(value_code: str, depth: int = 0) -> str:
    return (f"def verify_x(final_db_path):\n    x = {value_code}\n    for _ in range({depth}):\n        x = [x]\n"
            "    return {'result': 'others', 'value': x}\n")


BYSTANDER = "def verify_x(final_db_path):\n    import sqlite3\n    sqlite3.connect(final_db_path)\n" \
            "    return {'result': 'complete'}\n"


async def _with_bystander(sandbox: Sandbox, db: Path, code: str) -> Any:
    kwargs = {"final_db_path": str(db)}
    hostile, bystander = await asyncio.gather(sandbox.run(code, "verify_x", kwargs, timeout_s=5.0),
                                              sandbox.run(BYSTANDER, "verify_x", kwargs, timeout_s=5.0))
    assert bystander.error is None and bystander.value == {"result": "complete"}, bystander
    return hostile


@pytest.mark.parametrize(("value_code", "depth", "why"), [
    ("chr(0xD800)", 0, "surrogates not allowed"),
    ("10 ** 30", 0, "64-bit"),
    ("0", 300, "ecursion"),
])
async def test_an_unencodable_result_is_that_jobs_failure(sandbox: Sandbox, db: Path, value_code: str, depth: int,
                                                          why: str) -> None:
    await sandbox.run(BYSTANDER, "verify_x", {"final_db_path": str(db)})
    pid = sandbox.pid
    result = await _with_bystander(sandbox, db, _verifier(value_code, depth))
    assert result.value is None and result.fault == "verifier", result
    assert "not JSON" in (result.error or "") and why in (result.error or ""), result.error
    assert sandbox.pid == pid  # the server lived through it


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=JSONISH, depth=st.integers(0, 400))
async def test_fuzzed_results_never_end_the_server(sandbox: Sandbox, db: Path, value: Any, depth: int) -> None:
    await sandbox.run(BYSTANDER, "verify_x", {"final_db_path": str(db)})
    pid = sandbox.pid
    result = await _with_bystander(sandbox, db, _verifier(_literal(value), depth))
    assert result.error is None or result.fault in ("verifier", "raised"), result
    assert sandbox.pid == pid


def _serve_one(child_body: bytes, *, then_sleep: bool, code: str | None = None,
               kept: dict[str, bytes] | None = None) -> tuple[dict[str, Any], float, int]:
    """Run a real `Server` on pipes with one child that writes `child_body` raw and then sleeps (or exits);
    `code`: the child was asked to send its compiled code first. Returns the reply, the seconds it took, and
    the child's pid; `kept` receives the compiled code the server kept."""
    import os
    import threading
    import time

    from awm_runtime.isolation import read_exact
    from awm_runtime.verifiers._fork_server import Server

    req_r, req_w = os.pipe()
    out_r, out_w = os.pipe()
    server = Server(req_r, out_w, max_children=1, parent=os.getpid(), unsafe=True)
    res_r, res_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: what escaped code could write on its result pipe
        os.write(res_w, child_body)
        if then_sleep:
            time.sleep(30)
        os._exit(0)
    os.close(res_w)
    os.set_blocking(res_r, False)
    server.children[res_r] = _Child(pid, 9, time.monotonic() + 20, started, 20.0, 20, code=code)
    server.sel.register(res_r, __import__("selectors").EVENT_READ)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        (size,) = HEADER.unpack(read_exact(out_r, HEADER.size))
        reply = decode(read_exact(out_r, size))
        took = time.monotonic() - started
        deadline = time.monotonic() + 10
        while pid in server.exiting.values() and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        os.close(req_w)  # the runtime went away: the server returns
        thread.join(10)
    assert not thread.is_alive()
    server.stop()
    if kept is not None:
        kept.update(server.compiled)
    for fd in (req_r, out_r, out_w):
        os.close(fd)
    return reply, took, pid


def test_a_whole_result_is_answered_at_once_and_the_child_is_cut_short() -> None:
    """The reply goes out when the child's frame has arrived, not when the child exits: a child that keeps
    running after its result (escaped code) is killed and reaped, never waited for."""
    import os

    body = b'{"ok": true, "value": {"result": "complete"}}'
    reply, took, pid = _serve_one(HEADER.pack(len(body)) + body, then_sleep=True)
    assert reply["ok"] is True and reply["value"] == {"result": "complete"} and reply["id"] == 9
    # The outcome ruled out, as the bound: a server that waited for the child (it sleeps 30 s) would answer at
    # its 20-s deadline at the earliest; no bound tighter than that, which a loaded machine could cross.
    assert took < 20, took
    with pytest.raises(ChildProcessError):  # reaped by the server: no zombie left behind
        os.waitpid(pid, os.WNOHANG)


def test_a_cut_frame_is_an_unreadable_result() -> None:
    body = b'{"ok": true, "value": {"result": "complete"}}'
    reply, _, _ = _serve_one(HEADER.pack(len(body)) + body[:10], then_sleep=False)
    assert reply["ok"] is False and "unreadable result" in reply["error"]


RESULT = b'{"ok": true, "value": {"result": "complete"}}'


def _framed(body: bytes) -> bytes:
    return HEADER.pack(len(body)) + body


def test_a_childs_first_frame_of_code_is_kept_and_its_result_answered() -> None:
    kept: dict[str, bytes] = {}
    reply, _, _ = _serve_one(_framed(b"C" + b"marshalled") + _framed(RESULT), then_sleep=True, code="src", kept=kept)
    assert reply["ok"] is True and reply["value"] == {"result": "complete"}
    assert kept == {"src": b"marshalled"}


def test_only_a_child_asked_for_its_code_can_give_it() -> None:
    """A child started from the server's copy was not asked: a code frame from it is an unreadable result."""
    kept: dict[str, bytes] = {}
    reply, _, _ = _serve_one(_framed(b"C" + b"forged") + _framed(RESULT), then_sleep=True, kept=kept)
    assert reply["ok"] is False and "unreadable result" in reply["error"] and kept == {}


def test_only_the_first_frame_can_be_code() -> None:
    """Frames after the first are written once the verifier ran: a second code frame is a result, unreadable."""
    kept: dict[str, bytes] = {}
    reply, _, _ = _serve_one(_framed(b"C" + b"ours") + _framed(b"C" + b"theirs"), then_sleep=True, code="src",
                             kept=kept)
    assert reply["ok"] is False and "unreadable result" in reply["error"]
    assert kept == {"src": b"ours"}


def test_a_result_first_keeps_no_code() -> None:
    """A child that failed before compiling (a refused check, a sandbox fault) sends its result first."""
    kept: dict[str, bytes] = {}
    reply, _, _ = _serve_one(_framed(RESULT), then_sleep=False, code="src", kept=kept)
    assert reply["ok"] is True and kept == {}


async def test_a_verifier_runs_from_the_kept_code_as_from_its_source(sandbox: Sandbox, db: Path) -> None:
    """The same source verified again starts from the server's compiled copy and answers the same; another
    source with the same function name answers its own; a refused source is refused every time."""
    def code(result: str) -> str:
        return (f"def verify_task_completion(initial_db_path, final_db_path, final_answer):\n"
                f"    return {{'result': {result!r}}}\n")

    kwargs = {"initial_db_path": str(db), "final_db_path": str(db), "final_answer": ""}
    for _ in range(3):
        for result in ("complete", "others"):
            r = await sandbox.run(code(result), "verify_task_completion", kwargs, timeout_s=10, readable=(str(db),))
            assert r.error is None and r.value == {"result": result}, r
    refused = "def verify_task_completion(initial_db_path, final_db_path, final_answer):\n    return ().__class__\n"
    for _ in range(2):
        r = await sandbox.run(refused, "verify_task_completion", kwargs, timeout_s=10, readable=(str(db),))
        assert r.error is not None and "__class__" in r.error, r
