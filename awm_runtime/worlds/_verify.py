"""Judge a finished episode: code mode (the verifier decides) or SQL mode (verifier evidence + LLM judge).

The DB files are read-only while the verifier runs. Whose fault a failure is decides its verdict
(the message names the file, the scenario and the task):
- the verify function raised at run time on the final DB (a dropped table, a NULL where it expected
  text): `verifier_raised`, the agent's incomplete;
- the verifier's code does not load or returns nonsense: `judge_error` (the dataset's; infrastructure);
- the sandbox could not run it (timeout, limits, killed, server died): `verifier_error` (infrastructure).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from awm_runtime._types import Message, Verdict, VerdictResult
from awm_runtime.verifiers import Judge, Sandbox, SandboxResult, find_function_name, parse_criteria
from awm_runtime.worlds._format import CODE_VERIFIERS, SQL_VERIFIERS, Scenario, VerifierDef

VerifierMode = Literal["code", "sql"]
DEFAULT_FUNCTION = {"code": "verify_task_completion", "sql": "verify_task"}
FILES = {"code": CODE_VERIFIERS, "sql": SQL_VERIFIERS}


_FAILED: dict[str, VerdictResult] = {"raised": "verifier_raised", "verifier": "judge_error",
                                     "sandbox": "verifier_error"}


def failed_verdict(result: SandboxResult, mode: VerifierMode, where: str = "") -> Verdict:
    """The verdict of a verification that returned nothing, by whose fault that is."""
    return Verdict(result=_FAILED[result.fault or "sandbox"], mode=mode, elapsed_ms=result.elapsed_ms,
                   error=f"{where}{result.error}")


def code_verdict(result: SandboxResult, where: str = "") -> Verdict:
    """Code mode: {"result": "complete"|"others"}; a value of any other shape is a judge_error."""
    value = result.value
    if result.error is not None:
        return failed_verdict(result, "code", where)
    if isinstance(value, dict) and value.get("result") in ("complete", "others"):
        return Verdict(result=value["result"], mode="code", detail=value, elapsed_ms=result.elapsed_ms)
    return Verdict(result="judge_error", mode="code", elapsed_ms=result.elapsed_ms,
                   error=f"{where}verifier returned {str(value)[:200]!r}, not a dict with 'result'")


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
                       final_answer: str) -> SandboxResult:
        """Run the verifier function: what it returned, or why it did not."""
        function = find_function_name(verifier.code, DEFAULT_FUNCTION[verifier.mode])
        kwargs = {"initial_db_path": str(initial_db), "final_db_path": str(final_db), "final_answer": final_answer}
        with read_only(final_db):
            return await self.sandbox.run(verifier.code, function, kwargs, timeout_s=self.timeout_s,
                                          readable=(str(initial_db), str(final_db)))

    async def verify(self, scenario: Scenario, task_idx: int, task_text: str, initial_db: Path, final_db: Path,
                     final_answer: str, messages: Sequence[Message], *, mode: VerifierMode | None = None) -> Verdict:
        mode = mode or self.mode
        verifier = self.definition(scenario, task_idx, mode)
        if verifier is None:
            return Verdict(result="no_verifier", mode="none")
        where = f"{FILES[mode]}: scenario {scenario.id} task {task_idx}: "
        result = await self.evidence(verifier, initial_db, final_db, final_answer)
        if mode == "code":
            return code_verdict(result, where)
        if result.error is not None:
            return failed_verdict(result, "sql", where)
        if self.judge is None:
            return Verdict(result="judge_error", mode="sql", elapsed_ms=result.elapsed_ms,
                           error="SQL-mode verification needs a judge model (--judge ALIAS)")
        verdict = await self.judge.classify(task=task_text, messages=messages, evidence=result.value,
                                            criteria=parse_criteria(verifier.raw_response), final_answer=final_answer)
        verdict.elapsed_ms += result.elapsed_ms
        return verdict
