"""AwmWorld: an AWM-format dataset served as a World, one private DB copy per episode.

Scenario code never runs in this process: a `WorldWorkerPool` builds each scenario's template DB
and imports its app once, then serves tool calls for every episode. Each scenario has its own
directory, `<workdir>/<scenario>/` with `episodes/`, and its workers can reach nothing else. Once a
scenario is built and imported, its DB is copied to a **pristine template** in `<workdir>/.templates/`,
where no world worker ever had access, and its SHA-256 is kept: every clone and every verification
checks it first, and a template that changed is refused (WorldError), never used. Opening an episode
is a checked clone of the template (tens of microseconds on tmpfs); closing it deletes the file.
Verification goes through the `Verifier` (confined, read-only DBs), never through a tool.

Residency: a scenario is *held* while an episode of it is open (or it is being built). When the
last hold ends it becomes idle; beyond `keep_idle_scenarios` idle ones, the oldest is evicted: its
directory and tool list are dropped and its world workers are stopped, so the memory of a run over
the whole dataset stays flat when the plan runs each scenario's episodes together.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import os
import shutil
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from awm_runtime._errors import WorldError
from awm_runtime._log import get_logger
from awm_runtime._slices import loop_slice
from awm_runtime._types import Task, ToolSpec
from awm_runtime.verifiers import Judge, Sandbox
from awm_runtime.worlds._dbbuild import BuildReport
from awm_runtime.worlds._disk import AUTO_FLOOR_MIB, episodes_fit, quota_mib
from awm_runtime.worlds._format import Dataset, LoadProblem, Scenario, Solution
from awm_runtime.worlds._options import PoolOptions, WorldOptions
from awm_runtime.worlds._session import AwmSession, Prepared
from awm_runtime.worlds._templates import INLINE_COPY_BYTES, clone_checked, read_template, write_new
from awm_runtime.worlds._verify import Verifier
from awm_runtime.worlds._workdir import TEMPLATES, default_workdir
from awm_runtime.worlds._world_worker_pool import LoadSpec, WorldWorkerPool
from awm_runtime.worlds._world_worker_serve import EPISODES

log = get_logger("awm_runtime.worlds")


@dataclass(slots=True)
class _Failed:
    error: str


class AwmWorld:
    """Serves every scenario of a dataset. Templates and app imports are built once, lazily."""

    def __init__(self, dataset: Dataset, *, name: str = "", workdir: Path | None = None,
                 options: WorldOptions | None = None, judge: Judge | None = None) -> None:
        self.dataset = dataset
        self.options = options or WorldOptions()
        self._name = name or dataset.root.name
        self._own_workdir = workdir is None
        self._workdir = Path(workdir).absolute() if workdir else None  # workers do not share our cwd
        o = self.options
        self.pool = WorldWorkerPool(PoolOptions(workers=o.workers, tool_timeout_s=o.tool_timeout_s,
                                                load_timeout_s=o.load_timeout_s, max_workers=o.max_world_workers,
                                                memory_mb=o.world_memory_mb, validate_arguments=o.validate_arguments,
                                                unsafe=o.unsafe_no_sandbox,
                                                disk_mib=o.world_disk_mib or AUTO_FLOOR_MIB))
        self.sandbox = Sandbox(memory_mb=o.verifier_memory_mb, unsafe=o.unsafe_no_sandbox, reuse=o.verifier_reuse)
        self.problems: list[LoadProblem] = list(dataset.problems)
        self.verifier = Verifier(self.sandbox, dataset, mode=o.verifier, timeout_s=o.verifier_timeout_s, judge=judge,
                                 problems=self.problems)
        self._prepared: dict[str, Prepared | _Failed] = {}
        self._build_reports: dict[str, BuildReport] = {}
        self._builds: dict[str, asyncio.Future[Prepared | _Failed]] = {}
        self._holds: Counter[str] = Counter()  # scenario -> open episodes and builds in progress
        self._idle: OrderedDict[str, None] = OrderedDict()  # built scenarios with no hold, oldest first
        self._tool_names: dict[str, tuple[str, ...]] = {}  # kept after eviction: a few hundred bytes each
        self._in_flight: dict[str, int] = {}  # scenario -> most of its episodes a run keeps open at once
        self._quota_said: set[str] = set()  # scenarios whose quota, set by the user, was said to be too small
        self.builds = 0
        self.evictions = 0
        self._ids = itertools.count()
        self._tasks = [
            Task(scenario=sc.id, task_idx=i, text=text, scenario_title=sc.title,
                 has_verifier=sc.has_verifier(i, o.verifier))
            for sc in dataset.scenarios.values() if sc.runnable for i, text in enumerate(sc.tasks)
        ]

    @property
    def name(self) -> str:
        return self._name

    async def plan_in_flight(self, counts: Mapping[str, int]) -> None:
        """The most episodes of each scenario that will be open at once, which sizes its disk quota when
        `WorldOptions.world_disk_mib` is None (and, when it is set, says once if it is too small). A scenario
        built already is sized now; the others when they are built."""
        self._in_flight.update(counts)
        for scenario_id in counts:
            prepared = self._prepared.get(scenario_id)
            if isinstance(prepared, Prepared):
                await self._fit_quota(scenario_id, prepared.size)

    @property
    def workdir(self) -> Path:
        """Where templates and episode DBs live; created on first use (a world only listed needs none)."""
        if self._workdir is None:
            self._workdir = default_workdir()
        elif not self._own_workdir and not self._workdir.is_dir():
            self._workdir.mkdir(parents=True)
        return self._workdir

    @property
    def judge(self) -> Judge | None:
        return self.verifier.judge

    @judge.setter
    def judge(self, judge: Judge | None) -> None:
        self.verifier.judge = judge

    def tasks(self) -> Sequence[Task]:
        return self._tasks

    def scenario(self, scenario_id: str) -> Scenario:
        return self.dataset.scenarios[scenario_id]

    def solution(self, task: Task) -> Solution | None:
        return self.dataset.scenarios[task.scenario].solutions.get(task.task_idx)

    def build_report(self, scenario_id: str) -> BuildReport | None:
        return self._build_reports.get(scenario_id)

    def tool_names(self, scenario_id: str) -> tuple[str, ...] | None:
        """The tools of a scenario that was built at least once (even if evicted since); else None."""
        return self._tool_names.get(scenario_id)

    def load_error(self, scenario_id: str) -> str | None:
        """Why a scenario failed to build or import, if it did."""
        state = self._prepared.get(scenario_id)
        return state.error if isinstance(state, _Failed) else None

    async def prepare(self, scenario_id: str) -> Prepared:
        """Build the scenario's template and import its app (once while it stays resident); raise WorldError
        if it cannot load."""
        self._hold(scenario_id)
        try:
            return await self._prepare(scenario_id)
        finally:
            self.unhold(scenario_id)

    async def _prepare(self, scenario_id: str) -> Prepared:
        state = self._prepared.get(scenario_id)
        if state is None:
            build = self._builds.get(scenario_id)
            if build is None:
                build = self._builds[scenario_id] = asyncio.ensure_future(self._build(scenario_id))
            # An opener that is cancelled (a timeout, a trainer's Ctrl-C) must not cut the build short: a
            # build cancelled mid-way left the scenario unable to open for the rest of the world's life.
            try:
                state = await asyncio.shield(build)
            except asyncio.CancelledError:
                raise  # the build goes on; the next opener waits for it
            except BaseException:
                self._builds.pop(scenario_id, None)
                raise
            self._prepared[scenario_id] = state
            self._builds.pop(scenario_id, None)
        if isinstance(state, _Failed):
            raise WorldError(state.error)
        return state

    def _hold(self, scenario_id: str) -> None:
        self._holds[scenario_id] += 1
        self._idle.pop(scenario_id, None)

    def unhold(self, scenario_id: str) -> None:
        """End one hold on a scenario (an episode of it closed); its last hold's end makes it idle (see residency)."""
        self._holds[scenario_id] -= 1
        if self._holds[scenario_id] > 0:
            return
        del self._holds[scenario_id]
        if isinstance(self._prepared.get(scenario_id), Prepared):
            self._idle[scenario_id] = None
            while len(self._idle) > max(0, self.options.keep_idle_scenarios):
                self.evict(next(iter(self._idle)))

    def evict(self, scenario_id: str) -> None:
        """Drop a built scenario that no episode holds: its directory, its tools, and its world workers. The
        next episode of it builds it again, in a directory made anew. A scenario that failed to load stays failed."""
        if self._holds.get(scenario_id) or not isinstance(self._prepared.get(scenario_id), Prepared):
            return
        state = self._prepared.pop(scenario_id)
        assert isinstance(state, Prepared)
        self._idle.pop(scenario_id, None)
        self._drop_files(scenario_id)
        state.template.unlink(missing_ok=True)
        self.evictions += 1
        log.debug("scenario_evicted", scenario=scenario_id)

    async def _build(self, scenario_id: str) -> Prepared | _Failed:
        self.builds += 1
        directory = self.workdir / scenario_id  # all its workers may reach: initial.db and episodes/
        directory.mkdir(parents=True, exist_ok=True)
        template = directory / "initial.db"  # as its workers see it
        try:
            source = await asyncio.to_thread(self.dataset.source, scenario_id)
            local = Path(await self.pool.make_directory(scenario_id, str(directory)))
        except WorldError as exc:
            return self._fail(scenario_id, str(exc))
        payload = {"code": source.full_code, "inserts": [list(i) for i in source.inserts],
                   "tables": [[t.name, t.ddl, list(t.indexes), list(t.examples)] for t in source.tables]}
        source_code = source.full_code
        del source
        try:
            reply = await self.pool.build(scenario_id, payload, str(template), self.options.foreign_keys)
        except WorldError as exc:
            return self._fail(scenario_id, f"scenario {scenario_id!r} failed to load: {exc}")
        if "report" in reply:
            self._record_build(scenario_id, BuildReport.from_dict(reply["report"]))
        if not reply.get("ok"):
            stage = {"build": "its database failed to build", "import": "its full_code failed to import"}
            why = stage.get(reply.get("stage", ""), "it failed to load")
            quota = f" ({self.disk_full_text(scenario_id)})" if self.pool.disk_full(scenario_id) else ""
            self._drop_files(scenario_id)
            return self._fail(scenario_id, f"scenario {scenario_id!r} cannot run: {why}: {reply.get('error')}{quota}")
        try:
            pristine, size, digest = await asyncio.to_thread(self._keep_pristine, scenario_id, local / "initial.db")
        except OSError as exc:
            self._drop_files(scenario_id)
            return self._fail(scenario_id, f"scenario {scenario_id!r} cannot run: its template could not be "
                                           f"kept ({exc})")
        if self.pool.disk_full(scenario_id):  # what its build and import left leaves no room for an episode
            pristine.unlink(missing_ok=True)
            self._drop_files(scenario_id)
            return self._fail(scenario_id, self.disk_full_text(scenario_id, "cannot run: its build and import "
                                                                            "filled its disk"))
        await self._fit_quota(scenario_id, size)
        full = self.disk_full_text(scenario_id) if self.pool.quota_off is None else ""
        self.pool.register(scenario_id, LoadSpec(source_code, functools.partial(
            clone_checked, pristine, size=size, digest=digest, full=full), self.options.foreign_keys))
        tools = [ToolSpec(name=t["name"], description=t["description"], input_schema=t["input_schema"])
                 for t in reply["tools"]]
        self._tool_names[scenario_id] = tuple(t.name for t in tools)
        log.info("scenario_loaded", scenario=scenario_id, tools=len(tools), elapsed_ms=round(reply["elapsed_ms"], 1),
                 fds_swept=reply.get("fds_swept", 0))
        return Prepared(pristine, tools, size, digest)

    def _drop_files(self, scenario_id: str) -> None:
        """Stop the scenario's workers (a process is how a module's memory goes) and remove its directory: removing
        it detaches its tmpfs in the workers' mount namespace, whose memory goes with the last file held open."""
        self.pool.evict(scenario_id)
        shutil.rmtree(self.workdir / scenario_id, ignore_errors=True)

    async def _fit_quota(self, scenario_id: str, template_bytes: int) -> None:
        """Make the scenario's quota hold the episodes of it that will be open at once (or, when the user set
        it, say once that it will not)."""
        have = self.pool.quota_mib(scenario_id)
        in_flight = self._in_flight.get(scenario_id, self.options.in_flight)
        need = quota_mib(template_bytes, in_flight)
        if have is None or need <= have:
            return
        if self.options.world_disk_mib is not None:
            if scenario_id in self._quota_said:
                return
            self._quota_said.add(scenario_id)
            fits = episodes_fit(have, template_bytes)
            log.warning("world_disk_small", scenario=scenario_id, mib=have, needs_mib=need, in_flight=in_flight,
                        note=f"--world-disk-mib {have} holds about {fits} of the {in_flight} episodes of this "
                             f"scenario that may be open at once; the others would fail as world_error. Raise it to "
                             f"{need}, or leave it unset to size it for the run")
            return
        try:
            await self.pool.resize_quota(scenario_id, need)
        except WorldError as exc:
            log.warning("world_disk_not_resized", scenario=scenario_id, mib=have, needs_mib=need, error=str(exc))
            return
        log.info("world_disk_sized", scenario=scenario_id, mib=need, in_flight=in_flight,
                 template_kib=template_bytes >> 10)

    def disk_full_text(self, scenario_id: str, what: str = "is out of disk space") -> str:
        """Why a scenario's files no longer fit, and how to give them more room."""
        mib = self.pool.quota_mib(scenario_id) or self.options.world_disk_mib or AUTO_FLOOR_MIB
        return (f"scenario {scenario_id!r} {what}: its files are limited to {mib} MiB in all (raise it with "
                f"--world-disk-mib, or WorldOptions.world_disk_mib)")

    def _keep_pristine(self, scenario_id: str, built: Path) -> tuple[Path, int, bytes]:
        """Copy the DB the worker built and imported against to where no worker can reach, read-only, and hash
        it; the worker's own copy is deleted (whatever it still holds open of it changes nothing that is used)."""
        folder = self.workdir / TEMPLATES
        folder.mkdir(mode=0o755, exist_ok=True)
        pristine = folder / f"{scenario_id}.db"
        pristine.unlink(missing_ok=True)
        data = read_template(built, os.stat(built, follow_symlinks=False).st_size)
        write_new(pristine, data, 0o444, os.O_NOFOLLOW)
        built.unlink(missing_ok=True)
        return pristine, len(data), hashlib.sha256(data).digest()

    def _fail(self, scenario_id: str, error: str) -> _Failed:
        self.problems.append(LoadProblem("gen_envs.jsonl", scenario_id, error))
        log.warning("scenario_failed", scenario=scenario_id, error=error)
        return _Failed(error)

    def _record_build(self, scenario_id: str, report: BuildReport) -> None:
        if scenario_id in self._build_reports:  # built again after an eviction: reported the first time
            return
        self._build_reports[scenario_id] = report
        for f in report.failures:
            self.problems.append(LoadProblem(f.file, scenario_id, f"table {f.table}: {f.error}: {f.statement}"))
            log.warning("seed_statement_failed", file=f.file, scenario=scenario_id, table=f.table,
                        statement=f.statement, error=f.error)

    async def open(self, task: Task, *, episode_id: str) -> AwmSession:
        """A fresh episode of `task`: a private copy of its scenario's template. The session holds the
        scenario (it is not evicted) until it is closed."""
        self._hold(task.scenario)
        try:
            prepared = await self._prepare(task.scenario)
            await loop_slice()  # a scenario's build lets all its waiting episodes clone at once
            name = f"ep-{episode_id}-{next(self._ids)}.db"
            db = Path(self.pool.local(task.scenario), EPISODES, name)
            full = self.disk_full_text(task.scenario) if self.pool.quota_off is None else ""
            if prepared.size <= INLINE_COPY_BYTES:
                clone_checked(prepared.template, db, prepared.size, prepared.digest, full)
            else:
                await asyncio.to_thread(clone_checked, prepared.template, db, prepared.size, prepared.digest, full)
        except BaseException:
            self.unhold(task.scenario)
            raise
        return AwmSession(self, task, prepared, db, str(self.workdir / task.scenario / EPISODES / name))

    def episode_dbs(self) -> list[Path]:
        """The episode DBs that exist now, of every built scenario (as this process reaches them)."""
        return [p for sid, state in self._prepared.items() if isinstance(state, Prepared)
                for p in Path(self.pool.local(sid), EPISODES).glob("ep-*.db")]

    def unverified(self, tasks: Sequence[Task]) -> dict[tuple[str, int], str]:
        """Which of `tasks` cannot be verified in the world's verifier mode, and why. Reads and parses their
        verifier code (about 0.2 ms a task): call it off the event loop."""
        return {t.key: why for t in tasks if (why := self.verifier.problem(t.scenario, t.task_idx)) is not None}

    def residency(self) -> dict[str, int]:
        """Scenario builds, imports (builds included) and evictions so far, how many are built now, and how
        many world workers (one scenario each) have been started."""
        return {"builds": self.builds, "imports": self.pool.imports, "evictions": self.evictions,
                "resident": sum(isinstance(s, Prepared) for s in self._prepared.values()),
                "idle": len(self._idle), "workers_started": self.pool.started}

    async def aclose(self) -> None:
        builds = list(self._builds.values())
        for build in builds:
            build.cancel()
        await asyncio.gather(*builds, self.pool.aclose(), self.sandbox.aclose(), return_exceptions=True)
        self._remove_workdir()

    def close(self) -> None:
        """Stop the world's processes (SIGKILL: they hold nothing worth saving) and remove its files."""
        self.pool.close()
        self.sandbox.close()
        self._remove_workdir()

    def _remove_workdir(self) -> None:
        if self._own_workdir and self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
