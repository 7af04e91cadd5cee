"""AwmWorld: an AWM-format dataset served as a World, one private DB copy per episode."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from awm_runtime._errors import WorldError
from awm_runtime._types import Message, Task, ToolCall, ToolResult, ToolSpec, Verdict
from awm_runtime.worlds._dbbuild import BuildReport, build_database
from awm_runtime.worlds._format import Dataset, Scenario, Solution
from awm_runtime.worlds._host import ScenarioHost
from awm_runtime.worlds._verify import code_verdict, run_verifier


class AwmWorld:
    """Serves every scenario of a dataset. Templates and app imports are built once, lazily."""

    def __init__(self, dataset: Dataset, *, name: str = "", workdir: Path | None = None,
                 foreign_keys: bool = False, verifier_timeout_s: float = 20.0) -> None:
        self.dataset = dataset
        self._name = name or dataset.root.name
        self._own_workdir = workdir is None
        base = Path("/dev/shm") if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK) else None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="awm-world-", dir=base))
        self.foreign_keys = foreign_keys
        self.verifier_timeout_s = verifier_timeout_s
        self._templates: dict[str, Path] = {}
        self._hosts: dict[str, ScenarioHost] = {}
        self._build_reports: dict[str, BuildReport] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks = [
            Task(scenario=sc.id, task_idx=i, text=text, scenario_title=sc.title,
                 has_verifier=i in sc.code_verifiers or i in sc.sql_verifiers)
            for sc in dataset.scenarios.values() if sc.runnable for i, text in enumerate(sc.tasks)
        ]

    @property
    def name(self) -> str:
        return self._name

    def tasks(self) -> Sequence[Task]:
        return self._tasks

    def scenario(self, scenario_id: str) -> Scenario:
        return self.dataset.scenarios[scenario_id]

    def solution(self, task: Task) -> Solution | None:
        return self.dataset.scenarios[task.scenario].solutions.get(task.task_idx)

    def build_report(self, scenario_id: str) -> BuildReport | None:
        return self._build_reports.get(scenario_id)

    async def _prepare(self, scenario_id: str) -> tuple[Path, ScenarioHost]:
        lock = self._locks.setdefault(scenario_id, asyncio.Lock())
        async with lock:
            if scenario_id not in self._hosts:
                sc = self.dataset.scenarios[scenario_id]
                template = self.workdir / f"{scenario_id}.initial.db"
                try:
                    report = await asyncio.to_thread(build_database, sc, template, foreign_keys=self.foreign_keys)
                    host = await asyncio.to_thread(ScenarioHost, scenario_id, sc.full_code)
                except Exception as exc:
                    raise WorldError(f"scenario {scenario_id!r} failed to load: {type(exc).__name__}: {exc}") from exc
                template.chmod(0o444)  # the initial state is shared by every episode: never written
                self._build_reports[scenario_id] = report
                self._templates[scenario_id] = template
                self._hosts[scenario_id] = host
        return self._templates[scenario_id], self._hosts[scenario_id]

    async def open(self, task: Task, *, episode_id: str) -> AwmSession:
        template, host = await self._prepare(task.scenario)
        db = self.workdir / f"ep-{episode_id}.db"
        await asyncio.to_thread(shutil.copyfile, template, db)
        return AwmSession(self, task, host, template, db)

    def close(self) -> None:
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


class AwmSession:
    """One episode's world: a private DB copy, the scenario's tools, and its verifier."""

    def __init__(self, world: AwmWorld, task: Task, host: ScenarioHost, initial_db: Path, db: Path) -> None:
        self._world = world
        self._task = task
        self._host = host
        self.initial_db = initial_db
        self.db = db

    @property
    def tools(self) -> Sequence[ToolSpec]:
        return self._host.tools

    async def call_tool(self, call: ToolCall) -> ToolResult:
        return await self._host.call(str(self.db), call.name, call.arguments)

    async def verify(self, final_answer: str, messages: Sequence[Message]) -> Verdict:
        sc = self._world.scenario(self._task.scenario)
        verifier = sc.code_verifiers.get(self._task.task_idx)
        if verifier is None:
            return Verdict(result="no_verifier", mode="none")
        value, error, elapsed = await run_verifier(
            verifier, str(self.initial_db), str(self.db), final_answer, timeout_s=self._world.verifier_timeout_s)
        return code_verdict(value, error, elapsed)

    async def close(self) -> None:
        await asyncio.to_thread(self.db.unlink, True)
