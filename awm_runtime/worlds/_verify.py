"""Run a task's verifier against the initial and final DBs, out of process, and map its result."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from awm_runtime._types import Verdict
from awm_runtime.worlds._format import VerifierDef
from awm_runtime.worlds._verifier_child import find_function_name

DEFAULT_FUNCTION = {"code": "verify_task_completion", "sql": "verify_task"}
_SAFE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")


def scrubbed_env() -> dict[str, str]:
    """An environment with no keys, tokens or runtime settings: untrusted code gets nothing."""
    return {k: v for k, v in os.environ.items() if k in _SAFE_ENV_KEYS}


async def run_verifier(verifier: VerifierDef, initial_db: str, final_db: str, final_answer: str,
                       *, timeout_s: float = 20.0) -> tuple[Any, str | None, float]:
    """(returned value, error text or None, elapsed ms)."""
    job = {
        "code": verifier.code,
        "function": find_function_name(verifier.code, DEFAULT_FUNCTION[verifier.mode]),
        "initial_db_path": initial_db, "final_db_path": final_db, "final_answer": final_answer,
    }
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-m", "awm_runtime.worlds._verifier_child",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=scrubbed_env(), cwd=os.path.dirname(final_db) or ".",
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(json.dumps(job).encode()), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return None, f"verifier timed out after {timeout_s:g}s", (time.perf_counter() - started) * 1000
    elapsed = (time.perf_counter() - started) * 1000
    try:
        reply = json.loads(out)
    except json.JSONDecodeError:
        return None, f"verifier process failed: {err.decode(errors='replace')[-300:]}", elapsed
    if not reply.get("ok"):
        return None, str(reply.get("error")), elapsed
    return reply.get("value"), None, elapsed


def code_verdict(value: Any, error: str | None, elapsed_ms: float) -> Verdict:
    """Code mode: {"result": "complete"|"others"}; anything else is a judge_error."""
    if error is None and isinstance(value, dict) and value.get("result") in ("complete", "others"):
        return Verdict(result=value["result"], mode="code", detail=value, elapsed_ms=elapsed_ms)
    why = error or f"verifier returned {str(value)[:200]!r}, not a dict with 'result'"
    return Verdict(result="judge_error", mode="code", elapsed_ms=elapsed_ms, error=why)
