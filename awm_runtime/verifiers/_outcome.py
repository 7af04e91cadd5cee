"""What a verification comes to, in the process that ran it: a result object, then its frame.

Shared by the two ways a verification runs (`_fork_server`: a fresh fork per job; `_warm_worker`: a kept,
confined worker per verifier code): the same faults (`raised`, `verifier`, `sandbox`) and the same words.
"""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from awm_runtime.isolation import HEADER, encode
from awm_runtime.verifiers._restrict import Refused

MAX_RESULT = 8 << 20  # the largest result a verification may return


def describe(exc: BaseException) -> str:
    """An exception in one line, with the verifier's line where it has one."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == "<verifier>":
            where = f" (verifier line {frame.lineno})"
    if isinstance(exc, SyntaxError) and exc.filename == "<verifier>":
        where = f" (verifier line {exc.lineno})"
    return (f"{type(exc).__name__}: {exc}"[:600] + where).replace("\n", " ")


def fault(exc: BaseException) -> str:
    """Who an exception in the child is down to: "raised" when the verify function itself raised at run
    time (what an agent's final DB can cause: a dropped table, a NULL), else the verifier's code."""
    frames = traceback.extract_tb(exc.__traceback__)
    in_call = any(f.filename == "<verifier>" and f.name != "<module>" for f in frames)
    return "raised" if isinstance(exc, Exception) and in_call else "verifier"


def unencodable(exc: BaseException) -> str:
    """Why orjson refused a value, in words: a lone surrogate, an integer past 64 bits, nesting too deep."""
    return f"{type(exc).__name__}: {exc}"[:200].replace("\n", " ")


def outcome(run: Callable[[], Any], memory_mb: Any) -> dict[str, Any]:
    """`run()`'s value as a result object, or whatever it raised as a failure and whose fault that is."""
    try:
        return {"ok": True, "value": run()}
    except MemoryError:
        return {"ok": False, "fault": "sandbox", "error": f"verifier exceeded its memory limit ({memory_mb} MiB)"}
    except Refused as exc:
        return {"ok": False, "fault": "verifier", "error": f"refused: {exc}"}
    except BaseException as exc:  # whatever the verifier raises, SystemExit included, is a result
        return {"ok": False, "fault": fault(exc), "error": describe(exc)}


def result_frame(result: dict[str, Any], tail: dict[str, Any] | None = None) -> bytes:
    """The frame for `result` (with `tail`'s keys: a kept worker's job id), by the frame encoder's own rules
    (orjson): what passes here reaches the runtime as it is; a value that cannot be encoded is the verifier's
    failure."""
    tail = tail or {}
    try:
        return encode({**result, **tail})
    except (TypeError, ValueError, RecursionError, orjson.JSONEncodeError) as exc:
        return encode({"ok": False, "fault": "verifier", **tail,
                       "error": f"verifier returned a value that is not JSON ({unencodable(exc)})"})
    except MemoryError:  # nothing more is built: a prepared body, with the id (an int) if there is one
        job_id = tail.get("id")
        body = (b'{"ok":false,"fault":"sandbox",' + (b'"id":%d,' % job_id if isinstance(job_id, int) else b"")
                + b'"error":"verifier result exceeded the memory limit"}')
        return HEADER.pack(len(body)) + body


@dataclass(slots=True)
class _Child:
    """A job running in a process of the server's (a fork, or a kept worker): its clock, limits and output."""

    pid: int
    job_id: int
    deadline: float
    started: float
    timeout_s: float
    cpu_s: int
    buf: bytearray = field(default_factory=bytearray)
    killed: str = ""
    code: str | None = None  # the source whose compiled form this child will send first, if it is asked to
    kept: tuple[int, int] | None = None  # a kept worker's job: its templates already there, and sent with it


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def child_reply(child: _Child, status: int) -> dict[str, Any]:
    """What a finished child's job comes to: its own result, or why there is none."""
    if child.killed:
        return {"ok": False, "error": child.killed}
    if child.buf:
        return read_result(child.buf)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
        return {"ok": False, "error": f"verifier exceeded its CPU limit ({child.cpu_s}s)"}
    if os.WIFSIGNALED(status):
        return {"ok": False, "error": f"verifier process was killed by {_signal_name(os.WTERMSIG(status))}"}
    return {"ok": False, "error": f"verifier process exited with status {os.waitstatus_to_exitcode(status)} "
                                  "without a result"}


def clean(reply: dict[str, Any]) -> bool:
    """Whether a kept worker that answered `reply` may serve another job: after a value, or its verify function
    raising on its DB (anything else, a refusal, a limit, a value that is not JSON, may leave it unfit to keep)."""
    return reply.get("ok") is True or reply.get("fault") == "raised"


def read_result(body: bytes | bytearray | memoryview) -> dict[str, Any]:
    """A result frame's body as a process running verifier code wrote it: its reply object, or why it is none."""
    try:
        reply = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return {"ok": False, "error": f"verifier process wrote an unreadable result ({unencodable(exc)})"}
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        return {"ok": False, "error": "verifier process wrote a result that is not a reply object"}
    return reply


def reply_frame(child: _Child, status: int, elapsed_ms: float) -> bytes:
    """The frame for a finished job. Whatever the child wrote, this is a frame the runtime can read: a result
    that cannot be encoded (or anything else going wrong with it) is that job's failure, never the server's."""
    tail: dict[str, Any] = {"id": child.job_id, "elapsed_ms": elapsed_ms}
    if child.kept is not None:
        tail["kept"] = list(child.kept)
    try:
        return encode({**child_reply(child, status), **tail})
    except Exception as exc:
        return encode({"ok": False, "fault": "verifier", **tail,
                       "error": f"verifier returned a value that is not JSON ({unencodable(exc)})"})


