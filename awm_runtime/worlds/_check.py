"""`awm-worlds check` and `--exclude-trivial`: each task's no-op and reference run, for real.

Both go through the same path as an episode: a fresh session (template clone), tool calls in
a world worker, the verifier in its sandbox. A task whose no-op run already verifies is
trivial (AWM issue #16); no-op verdicts are cached per dataset fingerprint.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from awm_runtime._errors import WorldError
from awm_runtime._log import get_logger
from awm_runtime._types import Message, Task, ToolCall, Verdict
from awm_runtime.worlds._format import CODE_VERIFIERS, RUNNABLE_FILES, SPEC_FILE, SQL_VERIFIERS, LoadProblem
from awm_runtime.worlds._verify import VerifierMode
from awm_runtime.worlds._world import AwmWorld

log = get_logger("awm_runtime.worlds")
CACHE_VERSION = 1  # bump when what makes a task trivial changes
FAILING = ("others", "incomplete", "agent_error")


@dataclass(slots=True)
class TaskCheck:
    """One task's check: does it load, does doing nothing pass, does the reference solution pass.

    `verifier` says why the task cannot be verified (no row, or code that does not parse), else None."""

    scenario: str
    task_idx: int
    loads: bool = False
    noop_passes: bool | None = None
    reference_passes: bool | None = None
    errors: list[str] = field(default_factory=list)
    verifier: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _passes(verdict: Verdict, what: str, errors: list[str]) -> bool | None:
    if verdict.result == "complete":
        return True
    if verdict.result in FAILING:
        return False
    if verdict.result == "no_verifier":  # TaskCheck.verifier says why
        return None
    errors.append(f"{what}: {verdict.result}" + (f": {verdict.error}" if verdict.error else ""))
    return None


def _transcript(task: Task, steps: Sequence[tuple[str, dict[str, Any], str]], answer: str) -> list[Message]:
    """The reference run as an episode transcript, for a SQL-mode judge."""
    messages = [Message(role="user", content=task.text, source="system", turn=0)]
    for i, (tool, args, result) in enumerate(steps, 1):
        call = {"id": f"ref{i}", "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}
        messages += [Message(role="assistant", content=None, tool_calls=[call], source="policy", turn=i),
                     Message(role="tool", content=result, tool_call_id=f"ref{i}", name=tool, source="world", turn=i)]
    if answer:
        messages.append(Message(role="assistant", content=answer, source="policy", turn=len(steps) + 1))
    return messages


async def _noop(world: AwmWorld, task: Task, check: TaskCheck, mode: VerifierMode | None) -> None:
    session = await world.open(task, episode_id=f"noop-{uuid.uuid4().hex[:8]}")
    check.loads = True
    try:
        verdict = await world.verifier.verify(task.scenario, task.task_idx, task.text,
                                              session.initial_db, session.db, "", [], mode=mode)
    finally:
        await session.close()
    check.noop_passes = _passes(verdict, "no-op", check.errors)


async def _reference(world: AwmWorld, task: Task, check: TaskCheck) -> None:
    solution = world.solution(task)
    if solution is None:
        return
    session = await world.open(task, episode_id=f"ref-{uuid.uuid4().hex[:8]}")
    try:
        steps = []
        for i, (tool, args) in enumerate(solution.steps, 1):
            result = await session.call_tool(ToolCall(id=f"ref{i}", name=tool, arguments=args))
            steps.append((tool, args, result.text))
            if result.is_error:
                check.errors.append(f"reference step {i} ({tool}): {result.text[:300]}")
        verdict = await session.verify(solution.final_answer, _transcript(task, steps, solution.final_answer))
    finally:
        await session.close()
    check.reference_passes = _passes(verdict, "reference", check.errors)


async def check_task(world: AwmWorld, task: Task, *, reference: bool = True,
                     mode: VerifierMode | None = None) -> TaskCheck:
    """Check one task; a world failure is recorded in `errors`, never raised."""
    check = TaskCheck(task.scenario, task.task_idx)
    check.verifier = await asyncio.to_thread(world.verifier.problem, task.scenario, task.task_idx, mode)
    try:
        await _noop(world, task, check, mode)
        if reference:
            await _reference(world, task, check)
    except WorldError as exc:
        check.errors.append(str(exc))
    return check


async def check_tasks(world: AwmWorld, tasks: Sequence[Task], *, reference: bool = True, concurrency: int = 4,
                      mode: VerifierMode | None = None) -> list[TaskCheck]:
    """Check many tasks, `concurrency` at a time, in the order given."""
    slots = asyncio.Semaphore(concurrency)

    async def one(task: Task) -> TaskCheck:
        async with slots:
            return await check_task(world, task, reference=reference, mode=mode)

    return list(await asyncio.gather(*(one(t) for t in tasks)))


async def spec_problems(world: AwmWorld, scenario_id: str) -> list[LoadProblem]:
    """Operations that gen_spec.jsonl lists but the scenario's app does not define."""
    tools = world.tool_names(scenario_id)
    if tools is None:  # never built, or failed to load: nothing to compare
        return []
    try:
        spec = await asyncio.to_thread(world.dataset.spec, scenario_id)
    except WorldError:
        return []
    listed = [e.get("operation_id") for g in (spec or {}).get("api_groups") or () if isinstance(g, dict)
              for e in g.get("endpoints") or () if isinstance(e, dict)]
    return [LoadProblem(SPEC_FILE, scenario_id, f"operation {op!r} is in the spec but not in the app")
            for op in listed if isinstance(op, str) and op not in tools]


def parse_verifiers(world: AwmWorld, scenario_ids: Sequence[str]) -> None:
    """Parse (never run) every verifier row of these scenarios, in both modes; each one that cannot run is
    added to `world.problems`, per task. Reads the rows: call it off the event loop."""
    for sid in scenario_ids:
        for mode, rows in world.scenario(sid).verifiers.items():
            for idx in sorted(rows):
                world.verifier.usable(sid, idx, "code" if mode == "code" else "sql")


def scenario_report(world: AwmWorld, scenario_id: str) -> dict[str, Any]:
    """What `awm-worlds check` says about one scenario: can it run, and if not, why not."""
    sc = world.scenario(scenario_id)
    tools = world.tool_names(scenario_id)
    if not sc.runnable:
        why: str | None = "no usable row in " + ", ".join(sc.missing)
    else:
        why = world.load_error(scenario_id) or (None if tools is not None else "not built: no task of it was checked")
    return {"scenario": sc.id, "title": sc.title, "runnable": sc.runnable, "missing": sc.missing,
            "description": bool(sc.description), "tasks": len(sc.tasks),
            "tools": None if tools is None else len(tools), "loads": tools is not None, "why_not": why}


def fingerprint(world: AwmWorld) -> str:
    """The dataset's content, plus what changes a verdict, as one hash (reads every data file)."""
    digest = hashlib.sha256(f"v{CACHE_VERSION} fk={world.options.foreign_keys}".encode())
    for name in (*RUNNABLE_FILES, CODE_VERIFIERS, SQL_VERIFIERS):
        path = world.dataset.root / name
        digest.update(name.encode())
        if path.is_file():
            with path.open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
    return digest.hexdigest()[:24]


def cache_dir() -> Path:
    if os.environ.get("AWM_CACHE_DIR"):
        return Path(os.environ["AWM_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "awm-runtime"


async def trivial_tasks(world: AwmWorld, tasks: Sequence[Task], *, concurrency: int = 8) -> set[tuple[str, int]]:
    """Tasks whose code-mode verifier passes on the untouched DB; verdicts cached per dataset fingerprint."""
    path = cache_dir() / "trivial" / f"{await asyncio.to_thread(fingerprint, world)}.json"
    try:
        cached: dict[str, bool | None] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cached = {}
    todo = [t for t in tasks if f"{t.scenario}/{t.task_idx}" not in cached
            and world.scenario(t.scenario).has_verifier(t.task_idx, "code")]
    if todo:
        for check in await check_tasks(world, todo, reference=False, concurrency=concurrency, mode="code"):
            cached[f"{check.scenario}/{check.task_idx}"] = check.noop_passes
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(cached, sort_keys=True, indent=0), encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:  # a read-only home must not stop the run: the verdicts are recomputed next time
            log.warning("trivial_cache_not_saved", path=str(path), error=str(exc))
    trivial = {t.key for t in tasks if cached.get(f"{t.scenario}/{t.task_idx}") is True}
    log.info("trivial_tasks", checked=len(todo), cached=len(tasks) - len(todo), trivial=len(trivial), cache=str(path))
    return trivial
