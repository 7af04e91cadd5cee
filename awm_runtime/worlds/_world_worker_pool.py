"""The world worker pool: scenario code runs here, in a few long-lived processes, never in the runtime.

Each worker imports a scenario once and serves any number of episodes: the episode's state is
its own DB file, named in every call. A worker runs one request at a time and the pool knows
which one, so a request that hangs (timeout) or kills its worker costs exactly that request:
the worker is replaced and the requests queued behind it go on in the replacement.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import structlog

from awm_runtime._errors import WorldError
from awm_runtime.isolation import FrameError, encode, kill_process, read_frame, scrubbed_env, stop_process

log = structlog.get_logger("awm_runtime.worlds")

START_TIMEOUT_S = 60.0
# A request waits behind this many others on a worker that has its scenario loaded before the
# pool imports the scenario in a second worker. An import costs ~150 ms of CPU and a tool call ~2 ms
# (measured, issue 18), so a second import pays for itself only behind a long queue. An oracle run of
# 100 scenarios at 32 episodes in flight imported 1.8 times per scenario with a penalty of 8, 1.0 with 64.
LOAD_PENALTY = 64
_REAPERS: set[asyncio.Task[int]] = set()


def default_workers() -> int:
    return max(2, min(8, os.cpu_count() or 2))


@dataclass(frozen=True, slots=True)
class PoolOptions:
    workers: int = 0  # 0: one per core, between 2 and 8
    tool_timeout_s: float = 30.0
    load_timeout_s: float = 120.0
    max_scenarios_per_worker: int = 64
    validate_arguments: bool = True


class _WorldWorker:
    """One worker process and the parent's view of it: one request in flight, the rest queued."""

    def __init__(self, index: int, module: str) -> None:
        self.index = index
        self.module = module
        self.proc: asyncio.subprocess.Process | None = None
        self.lock = asyncio.Lock()
        self.loaded: set[str] = set()
        self.wanted: set[str] = set()
        self.pending = 0
        self.stderr: deque[str] = deque(maxlen=20)
        self._drain: asyncio.Task[None] | None = None
        self.started = 0

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def ensure_started(self) -> None:
        if self.alive:
            return
        self.loaded.clear()
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-m", self.module, "--parent", str(os.getpid()),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=scrubbed_env(), start_new_session=True)
        self.started += 1
        self.stderr.clear()
        self._drain = asyncio.get_running_loop().create_task(self._drain_stderr(self.proc))
        await self.exchange(None, START_TIMEOUT_S, "starting a world worker")

    async def _drain_stderr(self, proc: asyncio.subprocess.Process) -> None:
        """Keep the worker's stderr flowing (a full pipe would block it) and remember its tail."""
        assert proc.stderr is not None
        while line := await proc.stderr.readline():
            self.stderr.append(line.decode(errors="replace").rstrip()[:300])

    async def exchange(self, msg: dict[str, Any] | None, limit_s: float, what: str) -> dict[str, Any]:
        """Send one request (None: just read the greeting) and wait for its reply, within `limit_s`."""
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            if msg is not None:
                proc.stdin.write(encode(msg))
                await proc.stdin.drain()
            reply: dict[str, Any] = await asyncio.wait_for(read_frame(proc.stdout), limit_s)
        except TimeoutError:
            self.kill()
            raise WorldError(f"{what} did not finish within {limit_s:g}s; its world worker was stopped "
                             "and is replaced") from None
        except (asyncio.IncompleteReadError, ConnectionError, FrameError) as exc:
            code = await self._reap()
            raise WorldError(f"{what}: the world worker died ({_exit_text(code)}){self._tail()}; "
                             f"it is replaced") from exc
        return reply

    def _tail(self) -> str:
        lines = [ln for ln in self.stderr if ln.strip()]
        return f"; last output: {lines[-1]}" if lines else ""

    async def _reap(self) -> int | None:
        proc, self.proc = self.proc, None
        self.loaded.clear()
        if proc is None:
            return None
        try:
            return await asyncio.wait_for(proc.wait(), 2.0)
        except TimeoutError:
            kill_process(proc)
            return await proc.wait()

    def kill(self) -> None:
        proc, self.proc = self.proc, None
        self.loaded.clear()
        if proc is not None:
            kill_process(proc, release=True)
            reaper = asyncio.get_running_loop().create_task(proc.wait())
            _REAPERS.add(reaper)  # the loop keeps only weak references to tasks
            reaper.add_done_callback(_REAPERS.discard)

    async def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        await stop_process(proc, farewell=encode({"op": "exit"}))
        if self._drain is not None:
            self._drain.cancel()



def _exit_text(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


@dataclass(frozen=True, slots=True)
class LoadSpec:
    """What any worker needs to import a scenario that has been built."""

    code: str
    template: str
    foreign_keys: bool


class WorldWorkerPool:
    """Routes scenario builds, imports and tool calls to worker processes, and contains their failures."""

    def __init__(self, options: PoolOptions | None = None, *, module: str = "awm_runtime.worlds._world_worker") -> None:
        self.options = options or PoolOptions()
        n = self.options.workers or default_workers()
        self.workers = [_WorldWorker(i, module) for i in range(n)]
        self._specs: dict[str, LoadSpec] = {}
        self.replaced = 0
        self.imports = 0  # scenario imports (a build imports too), for the residency figures

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self.workers if w.proc is not None and w.alive]

    async def start(self) -> None:
        """Start every worker now (in parallel) rather than on first use."""
        async def one(w: _WorldWorker) -> None:
            async with w.lock:
                await w.ensure_started()
        await asyncio.gather(*(one(w) for w in self.workers))

    def _pick(self, scenario: str) -> _WorldWorker:
        def cost(w: _WorldWorker) -> tuple[int, int]:
            return (w.pending + (0 if scenario in w.wanted else LOAD_PENALTY), w.index)
        worker = min(self.workers, key=cost)
        worker.wanted.add(scenario)
        return worker

    async def _request(self, scenario: str, msg: dict[str, Any], limit_s: float, what: str, *,
                       check: bool = True) -> dict[str, Any]:
        """Run one request on a worker that has `scenario` loaded (loading it first if needed).

        A reply with ok=false replaces the worker and raises WorldError, or is returned if not `check`.
        """
        w = self._pick(scenario)
        w.pending += 1
        try:
            async with w.lock:
                try:
                    await w.ensure_started()
                    if scenario not in w.loaded:
                        await self._make_room(w, scenario)
                        if msg["op"] != "build":
                            await self._load(w, scenario)
                    reply = await w.exchange(msg, limit_s, what)
                except WorldError:
                    self.replaced += 1
                    w.wanted.discard(scenario)
                    raise
                if not reply.get("ok"):
                    self.replaced += 1
                    w.kill()  # a failed import or a fatal error leaves the worker in an unknown state
                    w.wanted.discard(scenario)
                    if not check:
                        return reply
                    raise WorldError(f"{what} failed: {reply.get('error')}") from None
                if msg["op"] == "build":
                    w.loaded.add(scenario)
                return reply
        finally:
            w.pending -= 1

    async def _make_room(self, w: _WorldWorker, scenario: str) -> None:
        if len(w.loaded) >= self.options.max_scenarios_per_worker:
            # Python cannot unload a module cleanly; a fresh process is the way to free memory.
            await w.stop()
            w.wanted = {scenario}
            await w.ensure_started()

    async def _load(self, w: _WorldWorker, scenario: str) -> None:
        spec = self._specs.get(scenario)
        if spec is None:
            raise WorldError(f"scenario {scenario!r} has not been built")
        reply = await w.exchange({"op": "load", "scenario": scenario, "code": spec.code, "template": spec.template,
                                  "foreign_keys": spec.foreign_keys,
                                  "validate_arguments": self.options.validate_arguments},
                                 self.options.load_timeout_s, f"importing scenario {scenario!r}")
        if not reply.get("ok"):
            w.kill()
            raise WorldError(f"scenario {scenario!r} failed to import: {reply.get('error')}")
        w.loaded.add(scenario)
        self.imports += 1
        log.info("scenario_imported", scenario=scenario, worker=w.index, note="imported again: another worker, "
                 "or this one after a restart")

    async def build(self, scenario: str, payload: dict[str, Any], template: str,
                    foreign_keys: bool) -> dict[str, Any]:
        """Build a scenario's template DB and import its app in one worker.

        The reply holds `tools` and the build `report`, or ok=false with the `stage` that failed
        (build or import), its `error`, and the report when the DB was built.
        """
        msg = {"op": "build", "scenario": scenario, "template": template, "foreign_keys": foreign_keys,
               "validate_arguments": self.options.validate_arguments, **payload}
        started = time.perf_counter()
        reply = await self._request(scenario, msg, self.options.load_timeout_s, f"loading scenario {scenario!r}",
                                    check=False)
        if not reply.get("ok"):
            return reply
        self._specs[scenario] = LoadSpec(payload["code"], template, foreign_keys)
        self.imports += 1
        reply["elapsed_ms"] = (time.perf_counter() - started) * 1000
        return reply

    async def call(self, scenario: str, db: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        msg = {"op": "call", "scenario": scenario, "db": db, "tool": tool, "args": arguments}
        return await self._request(scenario, msg, self.options.tool_timeout_s,
                                   f"tool {tool!r} of scenario {scenario!r}")

    def evict(self, scenario: str) -> None:
        """The world will not call `scenario` again unless it builds it anew: forget it.

        (Issue 18's contract with the pool: after `evict`, no worker is chosen for the scenario by
        affinity and its code is not kept for re-imports. Python cannot unload a module, so a worker's
        memory for it is returned when the worker is recycled; a worker per scenario returns it at once.)"""
        self._specs.pop(scenario, None)
        for w in self.workers:
            w.wanted.discard(scenario)

    async def aclose(self) -> None:
        await asyncio.gather(*(w.stop() for w in self.workers), return_exceptions=True)

    def close(self) -> None:
        """Synchronous stop: SIGKILL every worker (they hold no state worth saving)."""
        for w in self.workers:
            if w.proc is not None:
                kill_process(w.proc, release=True)
                w.proc = None
