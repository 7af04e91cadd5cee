"""Judge a finished episode: code mode (the verifier decides) or SQL mode (verifier evidence + LLM judge).

The DB files are read-only while the verifier runs. Whose fault a failure is decides its verdict
(the message names the file, the scenario and the task):
- the verify function raised at run time on the final DB (a dropped table, a NULL where it expected
  text): `verifier_raised`, the agent's incomplete;
- the verifier's code does not load or returns nonsense: `judge_error` (the dataset's; infrastructure);
- the sandbox could not run it (timeout, limits, killed, server died): `verifier_error` (infrastructure);
- the task has no verifier row, or its code does not even parse (a data problem, found before it runs
  and reported once): `no_verifier`, the episode ran unverified (it leaves the statistics too).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import hashlib
import os
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from awm_runtime._log import get_logger
from awm_runtime._types import Message, Verdict, VerdictResult
from awm_runtime.verifiers import Judge, Kept, Sandbox, SandboxResult, find_function_name, parse_criteria
from awm_runtime.worlds._format import VERIFIER_FILES, Dataset, LoadProblem, VerifierDef
from awm_runtime.worlds._templates import INLINE_COPY_BYTES

log = get_logger("awm_runtime.worlds")
VerifierMode = Literal["code", "sql"]
DEFAULT_FUNCTION = {"code": "verify_task_completion", "sql": "verify_task"}
FILES = VERIFIER_FILES
NO_ROW = "no verifier row"


def code_problem(verifier: VerifierDef) -> str | None:
    """Why `verifier`'s code cannot run at all (it does not parse, or lacks its function); None if it can.

    Parsing never executes the code, so this runs in the runtime; cost: ~0.1 ms per KB of code."""
    function = find_function_name(verifier.code, DEFAULT_FUNCTION[verifier.mode])
    try:
        tree = ast.parse(verifier.code)
    except SyntaxError as exc:
        return f"verifier code does not parse: {exc.msg}" + (f" (line {exc.lineno})" if exc.lineno else "")
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        return f"verifier code does not parse: {type(exc).__name__}: {str(exc)[:200]}"
    if not any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == function for n in tree.body):
        return f"verifier code defines no function {function!r}"
    return None


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


def _snapshot(db: Path, folder: Path) -> Path:
    """A read-only copy of an episode DB that this process reaches through its scenario's tmpfs descriptor
    (`/proc/self/fd/N/...`), in `folder` (beside the pristine templates: no world worker reaches it)."""
    fd, name = tempfile.mkstemp(prefix=".final-", suffix=".db", dir=folder)
    os.close(fd)
    try:
        shutil.copyfile(db, name)
        os.chmod(name, 0o444)
    except BaseException:
        os.unlink(name)
        raise
    return Path(name)


KEPT_INITIAL = 8  # initial DBs (pristine templates) whose bytes a Verifier keeps for kept verifier workers
# Both DBs larger than this together go to a fork, which reads them from their files: a kept worker's bytes are
# read on the event loop, which is cheaper than a hop to a thread only for small files (INLINE_COPY_BYTES each).
REUSE_MAX_BYTES = 2 * INLINE_COPY_BYTES
KEPT_DEFINITIONS = 256  # verifier definitions (code, a few KiB each) a Verifier keeps from its last reads


def _read(fd: int, size: int) -> bytes:
    """An open file's bytes, `size` expected: one read (a buffered `read_bytes` makes five system calls more)."""
    data = os.read(fd, size + 1)
    if len(data) <= size:  # a regular file reads short only at its end
        return data
    chunks = [data]
    while chunk := os.read(fd, 1 << 20):  # it grew since its size was read
        chunks.append(chunk)
    return b"".join(chunks)


def _status(st: os.stat_result) -> tuple[int, ...]:
    return st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class Verifier:
    """Runs a task's verifier in the sandbox and turns what it returns into a Verdict.

    Verifier code is read from the dataset when a task is verified (the last `KEPT_DEFINITIONS` kept), and checked
    once per task and mode; an unusable one is added to `problems` the first time it is seen."""

    def __init__(self, sandbox: Sandbox, dataset: Dataset, *, mode: VerifierMode = "code", timeout_s: float = 20.0,
                 judge: Judge | None = None, problems: list[LoadProblem] | None = None) -> None:
        self.sandbox = sandbox
        self.dataset = dataset
        self.mode: VerifierMode = mode
        self.timeout_s = timeout_s
        self.judge = judge
        self.problems = problems if problems is not None else []
        self._unusable: dict[tuple[str, int, str], str | None] = {}
        self._initial: OrderedDict[str, tuple[tuple[int, ...], Kept]] = OrderedDict()  # path -> (status, bytes)
        self._definitions: OrderedDict[tuple[str, int, str], VerifierDef | None] = OrderedDict()

    def _db_bytes(self, initial_db: Path, final_db: Path) -> dict[str, bytes | Kept] | None:
        """Both DBs' bytes by their paths, for a kept verifier worker; None when they are larger together than
        `REUSE_MAX_BYTES` (a fork then reads them from their files). Read on the loop: they are small (see
        INLINE_COPY_BYTES), and a read is what the snapshot it replaces costs. The initial DB is a template,
        the same for every episode of a scenario: its bytes are read (and hashed: the sandbox sends them once
        per kept worker, by that digest) again only when its status moved."""
        initial = os.stat(initial_db)
        fd = os.open(final_db, os.O_RDONLY | os.O_CLOEXEC)  # its size from the open file: one path walk, not two
        try:
            size = os.fstat(fd).st_size
            if initial.st_size + size > REUSE_MAX_BYTES:
                return None
            final = _read(fd, size)
        finally:
            os.close(fd)
        key, status = str(initial_db), _status(initial)
        kept = self._initial.get(key)
        if kept is None or kept[0] != status:
            data = initial_db.read_bytes()
            kept = self._initial[key] = (status, Kept(hashlib.blake2b(data, digest_size=16).hexdigest(), data))
            while len(self._initial) > KEPT_INITIAL:
                self._initial.popitem(last=False)
        self._initial.move_to_end(key)
        return {key: kept[1], str(final_db): final}

    def definition(self, scenario_id: str, task_idx: int, mode: VerifierMode | None = None) -> VerifierDef | None:
        """The task's verifier in `mode` (None: it has none), read from its row, or kept from the last reads
        (`KEPT_DEFINITIONS`, the least recently used dropped first: a batch verifies the same tasks again and
        again, and a read and parse of the row cost a verification more than its frames)."""
        key = (scenario_id, task_idx, mode or self.mode)
        if key in self._definitions:
            self._definitions.move_to_end(key)
            return self._definitions[key]
        found = self._definitions[key] = self.dataset.verifier(scenario_id, task_idx, key[2])
        while len(self._definitions) > KEPT_DEFINITIONS:
            self._definitions.popitem(last=False)
        return found

    def usable(self, scenario_id: str, task_idx: int,
               mode: VerifierMode | None = None) -> tuple[VerifierDef | None, str | None]:
        """(the verifier, None), or (None, why the task cannot be verified in `mode`)."""
        mode = mode or self.mode
        key = (scenario_id, task_idx, mode)
        if self._unusable.get(key) is not None:
            return None, self._unusable[key]
        verifier = self.definition(scenario_id, task_idx, mode)
        if key not in self._unusable:
            why = NO_ROW if verifier is None else code_problem(verifier)
            self._unusable[key] = why
            if why is not None and verifier is not None:
                self.problems.append(LoadProblem(FILES[mode], scenario_id, why, task_idx=task_idx))
                log.warning("verifier_unusable", file=FILES[mode], scenario=scenario_id, task_idx=task_idx,
                            problem=why)
        why = self._unusable[key]
        return (None, why) if why is not None else (verifier, None)

    def problem(self, scenario_id: str, task_idx: int, mode: VerifierMode | None = None) -> str | None:
        """Why the task cannot be verified in `mode` (no row, or code that does not parse); None if it can."""
        return self.usable(scenario_id, task_idx, mode)[1]

    async def evidence(self, verifier: VerifierDef, initial_db: Path, final_db: Path,
                       final_answer: str) -> SandboxResult:
        """Run the verifier function: what it returned, or why it did not."""
        function = find_function_name(verifier.code, DEFAULT_FUNCTION[verifier.mode])
        kwargs = {"initial_db_path": str(initial_db), "final_db_path": str(final_db), "final_answer": final_answer}
        data = self._db_bytes(initial_db, final_db) if self.sandbox.reuse else None
        if data is not None:  # a kept worker: it reads no file, so the DBs go as bytes (no snapshot, no chmod)
            return await self.sandbox.run(verifier.code, function, kwargs, timeout_s=self.timeout_s, data=data)
        if str(final_db).startswith("/proc/"):  # no other process can follow this process's descriptors
            if os.stat(final_db).st_size <= INLINE_COPY_BYTES:  # a thread hop costs more than a small copy
                snapshot = _snapshot(final_db, initial_db.parent)
            else:
                snapshot = await asyncio.to_thread(_snapshot, final_db, initial_db.parent)
            try:
                return await self.evidence(verifier, initial_db, snapshot, final_answer)
            finally:
                snapshot.unlink(missing_ok=True)
        with read_only(final_db):
            return await self.sandbox.run(verifier.code, function, kwargs, timeout_s=self.timeout_s,
                                          readable=(str(initial_db), str(final_db)))

    async def verify(self, scenario_id: str, task_idx: int, task_text: str, initial_db: Path, final_db: Path,
                     final_answer: str, messages: Sequence[Message], *, mode: VerifierMode | None = None) -> Verdict:
        mode = mode or self.mode
        where = f"{FILES[mode]}: scenario {scenario_id} task {task_idx}: "
        verifier, why = self.usable(scenario_id, task_idx, mode)
        if verifier is None:
            return Verdict(result="no_verifier", mode="none", error=None if why == NO_ROW else f"{where}{why}")
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
