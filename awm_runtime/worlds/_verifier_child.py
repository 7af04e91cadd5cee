"""Child process that runs one verifier function. Reads a JSON job on stdin, writes JSON out.

Run as `python -m awm_runtime.worlds._verifier_child`; never imported by the runtime itself.
"""

from __future__ import annotations

import inspect
import json
import sys
from typing import Any


def find_function_name(code: str, default: str) -> str:
    """The first line starting with `def verify_` names the function; else the mode's default."""
    for line in code.splitlines():
        if line.startswith("def verify_"):
            return line[len("def "):].split("(", 1)[0].strip()
    return default


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "awm_verifier"}
    exec(compile(job["code"], "<verifier>", "exec"), namespace)
    fn = namespace.get(job["function"])
    if not callable(fn):
        return {"ok": False, "error": f"verifier defines no function {job['function']!r}"}
    offered = {"initial_db_path": job["initial_db_path"], "final_db_path": job["final_db_path"],
               "final_answer": job.get("final_answer") or ""}
    params = inspect.signature(fn).parameters
    value = fn(**{k: v for k, v in offered.items() if k in params})
    return {"ok": True, "value": value}


def main() -> None:
    job = json.loads(sys.stdin.read())
    try:
        out = run_job(job)
    except BaseException as exc:  # report every verifier failure as data, including SystemExit
        out = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
