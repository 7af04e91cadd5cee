"""Judge a finished episode: code mode (the verifier decides) or SQL mode (verifier evidence + LLM judge).

The DB files are read-only while the verifier runs. A verifier that raises, hangs or returns
nonsense is a `judge_error` whose message names the file, the scenario and the task.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from awm_runtime._types import Message, Verdict
from awm_runtime.verifiers import Judge, Sandbox, find_function_name, parse_criteria
from awm_runtime.worlds._format import CODE_VERIFIERS, SQL_VERIFIERS, Scenario, VerifierDef

VerifierMode = Literal["code", "sql"]
DEFAULT_FUNCTION = {"code": "verify_task_completion", "sql": "verify_task"}
FILES = {"code": CODE_VERIFIERS, "sql": SQL_VERIFIERS}


def code_verdict(value: Any, error: str | None, elapsed_ms: float, where: str = "") -> Verdict:
    """Code mode: {"result": "complete"|"others"}; anything else is a judge_error."""
    if error is None and isinstance(value, dict) and value.get("result") in ("complete", "others"):
        return Verdict(result=value["result"], mode="code", detail=value, elapsed_ms=elapsed_ms)
    why = error or f"verifier returned {str(value)[:200]!r}, not a dict with 'result'"
    return Verdict(result="judge_error", mode="code", elapsed_ms=elapsed_ms, error=f"{where}{why}")


@contextlib.contextmanager
def read_only(path: Path) -> Any:
    """Make an episode DB read-only while a verifier looks at it (the sandbox runs as another user)."""
    mode = path.stat().st_mode & 0o777
    path.chmod(0o444)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.chmod(mode)


class Verifier:
    """Runs a task's verifier in the sandbox and turns what it returns into a Verdict."""

    def __init__(self, sandbox: Sandbox, *, mode: VerifierMode = "code", timeout_s: float = 20.0,
                 judge: Judge | None = None) -> None:
        self.sandbox = sandbox
        self.mode: VerifierMode = mode
        self.timeout_s = timeout_s
        self.judge = judge

    def definition(self, scenario: Scenario, task_idx: int, mode: VerifierMode | None = None) -> VerifierDef | None:
        table = scenario.code_verifiers if (mode or self.mode) == "code" else scenario.sql_verifiers
        return table.get(task_idx)

    async def evidence(self, verifier: VerifierDef, initial_db: Path, final_db: Path,
                       final_answer: str) -> tuple[Any, str | None, float]:
        """Run the verifier function: (what it returned, error text or None, elapsed ms)."""
        function = find_function_name(verifier.code, DEFAULT_FUNCTION[verifier.mode])
        kwargs = {"initial_db_path": str(initial_db), "final_db_path": str(final_db), "final_answer": final_answer}
        with read_only(final_db):
            result = await self.sandbox.run(verifier.code, function, kwargs, timeout_s=self.timeout_s,
                                            readable=(str(initial_db), str(final_db)))
        return result.value, result.error, result.elapsed_ms

    async def verify(self, scenario: Scenario, task_idx: int, task_text: str, initial_db: Path, final_db: Path,
                     final_answer: str, messages: Sequence[Message], *, mode: VerifierMode | None = None) -> Verdict:
        mode = mode or self.mode
        verifier = self.definition(scenario, task_idx, mode)
        if verifier is None:
            return Verdict(result="no_verifier", mode="none")
        where = f"{FILES[mode]}: scenario {scenario.id} task {task_idx}: "
        value, error, elapsed = await self.evidence(verifier, initial_db, final_db, final_answer)
        if mode == "code":
            return code_verdict(value, error, elapsed, where)
        if error is not None:
            return Verdict(result="judge_error", mode="sql", elapsed_ms=elapsed, error=f"{where}{error}")
        if self.judge is None:
            return Verdict(result="judge_error", mode="sql", elapsed_ms=elapsed,
                           error="SQL-mode verification needs a judge model (--judge ALIAS)")
        verdict = await self.judge.classify(task=task_text, messages=messages, evidence=value,
                                            criteria=parse_criteria(verifier.raw_response), final_answer=final_answer)
        verdict.elapsed_ms += elapsed
        return verdict
