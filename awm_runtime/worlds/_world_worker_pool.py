"""The world worker pool: scenario code runs in world workers, one scenario per worker, never in the runtime.

Workers are forked from a pre-imported zygote (`_world_worker`), so a new one costs milliseconds.
Each is confined to its scenario's directory: another scenario's DBs, the user's files, the
network and the runtime's memory are out of its reach. A scenario gets a second worker when
`LOAD_PENALTY` requests are queued on the first (up to `workers` per scenario); the least recently
used idle worker is stopped when `max_workers` are alive, and `evict` stops a scenario's workers
when the world is done with it (issue 18's residency).

Every frame carries a request id and one reader task per worker hands each reply to the future of
its id, so a reply can never reach another request. A worker runs its scenario's tool calls side by
side (threads in the worker, issue 31): a slow call delays its own episode only. A call that passes
its timeout *retires* its worker: no new call goes to it, calls go to a new one, and the old one is
killed once the calls it still runs have ended. A call's timeout is for running, not for queueing: a call
sent behind a full worker (all `CALL_THREADS` busy) is given a round of the timeout for each full set of
calls ahead of it, as the verifier server does, so an overloaded machine slows calls down rather than
failing them. When a worker dies with several calls in flight,
any of them may have killed it: each is run once more, alone in a worker of its own (at most
`SUSPECTS` at once per scenario), so a call that kills its worker again ends its own episode only.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from awm_runtime._errors import WorldError
from awm_runtime._log import get_logger
from awm_runtime.worlds._options import PoolOptions
from awm_runtime.worlds._world_worker_handle import Collateral, Gone, WorldWorker
from awm_runtime.worlds._world_worker_serve import EPISODES
from awm_runtime.worlds._world_zygote import Zygote, reap_later

log = get_logger("awm_runtime.worlds")

# A request waits behind this many others on its scenario's least busy worker before the pool starts
# another worker for the scenario. A second worker costs a fork and an import: ~150 ms of CPU against
# ~2 ms a tool call (measured, issue 18), so it pays for itself only behind a long queue. (Issue 18,
# with shared workers: an oracle run of 100 scenarios at 32 episodes in flight imported 1.8 times per
# scenario with a penalty of 8, 1.0 with 64.)
LOAD_PENALTY = 64
FULL_BYTES = 1 << 20  # a scenario's tmpfs with less free is full: a failure in it is blamed on its quota
SUSPECTS = 8  # calls of a scenario run again at once, each alone in a worker of its own, after a worker died


def default_workers() -> int:
    """Most workers per scenario when PoolOptions.workers is 0: one per core, between 2 and 8."""
    return max(2, min(8, os.cpu_count() or 2))


@dataclass(frozen=True, slots=True)
class LoadSpec:
    """What any worker needs to import a scenario that has been built."""

    code: str
    clone: Callable[[str], None]  # copies the pristine template (hash checked) to the path given
    foreign_keys: bool


class WorldWorkerPool:
    """Routes scenario builds, imports and tool calls to world workers, and contains their failures."""

    def __init__(self, options: PoolOptions | None = None, *,
                 module: str = "awm_runtime.worlds._world_worker") -> None:
        self.options = options or PoolOptions()
        self.replicas = self.options.workers or default_workers()
        self.zygote = Zygote(module, self.options.unsafe)
        self.workers: dict[str, list[WorldWorker]] = {}
        self._specs: dict[str, LoadSpec] = {}
        self._quarantine: dict[str, asyncio.Semaphore] = {}
        self._suspects: dict[str, set[WorldWorker]] = {}
        self._homes: dict[str, WorldWorker] = {}  # episode DB -> the worker that keeps its connection
        self._scratch_ids = itertools.count(1)
        self._dirs: dict[str, str] = {}  # scenario -> its directory, as its workers see it
        self._mounts: dict[str, str] = {}  # scenario -> where this process reaches its tmpfs (its disk quota)
        self.quota_off: str | None = None  # why scenarios have no disk quota, once a mount was refused
        self.replaced = 0  # workers replaced after a failure
        self.started = 0  # worker processes started
        self.imports = 0  # scenario imports (a build imports too), for the residency figures

    def pids(self) -> list[int]:
        """The zygote's and every live worker's pid."""
        out = [self.zygote.proc.pid] if self.zygote.alive and self.zygote.proc is not None else []
        return out + [w.pid for ws in self.workers.values() for w in ws if w.pid is not None]

    async def start(self) -> None:
        """Start the zygote now rather than on first use."""
        async with self.zygote.lock:
            await self.zygote._ensure()

    async def make_directory(self, scenario: str, directory: str) -> str:
        """Give `scenario` its directory (which must exist), with a tmpfs of `disk_mib` MiB mounted on it in the
        workers' mount namespace; return the path by which this process reaches it. Without a mount namespace,
        the directory itself (no quota: `quota_off` says why, logged once)."""
        self._dirs[scenario] = directory
        local = await self.zygote.mount(directory, self.options.disk_mib) if not self.options.unsafe else None
        if local is None:
            self._mounts.pop(scenario, None)
            if self.quota_off is None:
                self.quota_off = str(self.zygote.hello.get("quota_off") or "--unsafe-no-sandbox")
                log.warning("world_disk_quota_off", why=self.quota_off,
                            note="a scenario's files are bounded one by one (RLIMIT_FSIZE), not in total")
            os.makedirs(os.path.join(directory, EPISODES), exist_ok=True)
            return directory
        self._mounts[scenario] = local
        return local

    def local(self, scenario: str) -> str:
        """Where this process reaches `scenario`'s directory (in the workers' mount namespace, when it has a quota)."""
        return self._mounts.get(scenario) or self.directory(scenario)

    def quota_mib(self, scenario: str) -> int | None:
        """`scenario`'s disk quota in MiB (the size of its tmpfs), or None when it has none."""
        local = self._mounts.get(scenario)
        if local is None:
            return None
        st = os.statvfs(local)
        return st.f_blocks * st.f_frsize >> 20

    async def resize_quota(self, scenario: str, mib: int) -> None:
        """Give `scenario`'s tmpfs `mib` MiB; its files stay. Raises WorldError if the zygote could not."""
        if scenario in self._mounts:
            await self.zygote.mount(self.directory(scenario), mib, resize=True)

    def disk_full(self, scenario: str) -> bool:
        """Whether `scenario`'s disk quota is (nearly) used up: less than FULL_BYTES free in its tmpfs."""
        local = self._mounts.get(scenario)
        if local is None:
            return False
        st = os.statvfs(local)
        return st.f_bavail * st.f_frsize < FULL_BYTES

    def directory(self, scenario: str) -> str:
        directory = self._dirs.get(scenario)
        if directory is None:
            raise WorldError(f"scenario {scenario!r} has not been built")
        return directory

    async def load_message(self, scenario: str) -> dict[str, Any]:
        """An import for a further worker, against a fresh scratch copy of the pristine template."""
        spec = self._specs.get(scenario)
        if spec is None:
            raise WorldError(f"scenario {scenario!r} has not been built")
        name = f"import-{next(self._scratch_ids)}.db"
        scratch = os.path.join(self.local(scenario), name)
        await asyncio.to_thread(spec.clone, scratch)
        return {"op": "load", "scenario": scenario, "code": spec.code, "local": scratch,
                "template": os.path.join(self.directory(scenario), name),
                "foreign_keys": spec.foreign_keys, "validate_arguments": self.options.validate_arguments}

    def _pick(self, scenario: str, db: str | None = None) -> WorldWorker:
        slots = self.workers.setdefault(scenario, [])
        usable = [w for w in slots if w.usable]
        best = min(usable, key=lambda w: w.queued, default=None)
        home = self._homes.get(db) if db is not None else None
        if home is not None and best is not None and home in usable and home.queued < best.queued + LOAD_PENALTY:
            return home  # it keeps the episode's connection: no connect and schema parse (~0.5 ms)
        if best is None or (best.queued >= LOAD_PENALTY and len(usable) < self.replicas):
            self._make_room()
            best = WorldWorker(self, scenario)
            slots.append(best)
        return best

    def forget(self, worker: WorldWorker) -> None:
        """`worker` takes no new request (it died, was stopped, or retires)."""
        slots = self.workers.get(worker.scenario)
        if slots is not None and worker in slots:
            slots.remove(worker)
        self._suspects.get(worker.scenario, set()).discard(worker)

    def _suspect_worker(self, scenario: str) -> WorldWorker:
        """A worker of its own for one call run again after a death (it retires after that call)."""
        w = WorldWorker(self, scenario)
        self._suspects.setdefault(scenario, set()).add(w)
        return w

    def _make_room(self) -> None:
        """At `max_workers` live workers, stop the least recently used idle one (Python cannot unload a module)."""
        live = [w for ws in self.workers.values() for w in ws if w.alive]
        if len(live) < self.options.max_workers:
            return
        idle = [w for w in live if w.queued == 0 and not w.pending and not w.start_lock.locked()]
        if idle:
            victim = min(idle, key=lambda w: w.last_used)
            self.forget(victim)
            reap_later(victim.stop())

    async def _request(self, scenario: str, msg: dict[str, Any], limit_s: float, what: str, *,
                       check: bool = True, suspect: bool = False) -> dict[str, Any]:
        """Run one request on a worker of `scenario` (`suspect`: on the worker for calls run again). A reply with
        ok=false ends the worker (a call's: once its other calls have ended) and raises WorldError, or is returned
        if not `check`."""
        for _ in range(8):
            w = self._suspect_worker(scenario) if suspect else self._pick(scenario, msg.get("db"))
            if msg["op"] == "call" and not suspect:
                self._homes[msg["db"]] = w
            w.queued += 1
            try:
                reply = await w.request(msg, limit_s, what, load=msg["op"] != "build")
            except Gone:
                continue
            except WorldError:
                self.replaced += 1
                raise
            finally:
                w.queued -= 1
                if suspect:
                    w.retire("its one call ended")
            break
        else:
            raise WorldError(f"{what}: no world worker could take it")
        if not reply.get("ok"):
            self.replaced += 1
            if msg["op"] == "call":
                w.retire(f"{what} failed")  # the worker may be in a bad state; its other calls finish first
            else:
                w.kill()  # a failed import leaves the worker in an unknown state
            if not check:
                return reply
            raise WorldError(f"{what} failed: {reply.get('error')}") from None
        return reply

    async def build(self, scenario: str, payload: dict[str, Any], template: str,
                    foreign_keys: bool) -> dict[str, Any]:
        """Build a scenario's DB and import its app in a new worker confined to the DB's folder.

        The reply holds `tools` and the build `report`, or ok=false with the `stage` that failed
        (build or import), its `error`, and the report when the DB was built. The caller then keeps a
        pristine copy of the DB and registers how other workers import the scenario (`register`).
        """
        self._dirs[scenario] = os.path.dirname(template)
        msg = {"op": "build", "scenario": scenario, "template": template, "foreign_keys": foreign_keys,
               "validate_arguments": self.options.validate_arguments, **payload}
        started = time.perf_counter()
        reply = await self._request(scenario, msg, self.options.load_timeout_s, f"loading scenario {scenario!r}",
                                    check=False)
        if not reply.get("ok"):
            return reply
        self.imports += 1
        reply["elapsed_ms"] = (time.perf_counter() - started) * 1000
        return reply

    def register(self, scenario: str, spec: LoadSpec) -> None:
        """How further workers of `scenario` import it: its code, and a scratch copy of its pristine template."""
        self._specs[scenario] = spec

    async def call(self, scenario: str, db: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        msg = {"op": "call", "scenario": scenario, "db": db, "tool": tool, "args": arguments}
        what = f"tool {tool!r} of scenario {scenario!r}"
        try:
            return await self._request(scenario, msg, self.options.tool_timeout_s, what)
        except Collateral as exc:
            # Its worker died running it beside other calls: it may not be the culprit. Run it once more, alone
            # in a worker of its own, so that the culprit ends its own episode and nothing else.
            log.info("world_call_run_again", scenario=scenario, tool=tool, why=str(exc)[:200])
            async with self._quarantine.setdefault(scenario, asyncio.Semaphore(SUSPECTS)):
                return await self._request(scenario, msg, self.options.tool_timeout_s, what, suspect=True)

    def release(self, db: str) -> None:
        """The episode of `db` has ended: its calls need no particular worker (the worker closes its connection
        once the file is gone)."""
        self._homes.pop(db, None)

    def evict(self, scenario: str) -> None:
        """The world will not call `scenario` again unless it builds it anew: stop its workers (their
        memory goes with them) and forget its code and directory. A worker still busy with a cancelled
        request's call exits when that call ends."""
        self._specs.pop(scenario, None)
        self._dirs.pop(scenario, None)
        self._quarantine.pop(scenario, None)
        self._mounts.pop(scenario, None)  # its tmpfs goes once its directory is removed and its workers are gone
        for w in [*self.workers.pop(scenario, []), *self._suspects.pop(scenario, set())]:
            reap_later(w.stop())

    async def aclose(self) -> None:
        every = [*(w for ws in (*self.workers.values(), *self._suspects.values()) for w in ws)]
        await asyncio.gather(*(w.stop() for w in every), return_exceptions=True)
        self._mounts.clear()
        await self.zygote.aclose()

    def close(self) -> None:
        """Synchronous stop: SIGKILL every worker and the zygote (they hold no state worth saving)."""
        for w in [*(w for ws in (*self.workers.values(), *self._suspects.values()) for w in ws)]:
            w.kill()
        if self.zygote.sock is not None:
            self.zygote.sock.close()
            self.zygote.sock = None
        if self.zygote.proc is not None and self.zygote.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.zygote.proc.pid, signal.SIGKILL)
        self._mounts.clear()
        self.zygote.release_namespaces()
