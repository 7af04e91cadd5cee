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
import resource
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from awm_runtime._errors import WorldError
from awm_runtime._log import get_logger
from awm_runtime.isolation import MAX_FRAME, FrameError, encode, read_frame
from awm_runtime.worlds._call_threads import IDLE_EXIT_S
from awm_runtime.worlds._host import IDLE_CONNECTIONS, SPARE_FILES
from awm_runtime.worlds._world_worker import CALL_THREADS, EPISODES
from awm_runtime.worlds._world_zygote import Zygote, exit_text, reap_later

log = get_logger("awm_runtime.worlds")

# A request waits behind this many others on its scenario's least busy worker before the pool starts
# another worker for the scenario. A second worker costs a fork and an import: ~150 ms of CPU against
# ~2 ms a tool call (measured, issue 18), so it pays for itself only behind a long queue. (Issue 18,
# with shared workers: an oracle run of 100 scenarios at 32 episodes in flight imported 1.8 times per
# scenario with a penalty of 8, 1.0 with 64.)
LOAD_PENALTY = 64
OPEN_FILES = IDLE_CONNECTIONS + SPARE_FILES  # a world worker: its episodes' kept connections, and the rest
RECYCLE_CPU_SHARE = 0.8  # a worker that has used this share of its CPU limit is replaced between requests
FULL_BYTES = 1 << 20  # a scenario's tmpfs with less free is full: a failure in it is blamed on its quota
SUSPECTS = 8  # calls of a scenario run again at once, each alone in a worker of its own, after a worker died


def default_workers() -> int:
    return max(2, min(8, os.cpu_count() or 2))


def _hard_open_files() -> int:
    """This process's hard open-file limit: a worker cannot raise its own past it."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return OPEN_FILES if hard == resource.RLIM_INFINITY else int(hard)


@dataclass(frozen=True, slots=True)
class PoolOptions:
    workers: int = 0  # most workers per scenario; 0: one per core, between 2 and 8
    max_workers: int = 64  # most workers alive at once (idle ones are stopped first)
    tool_timeout_s: float = 30.0
    load_timeout_s: float = 120.0
    validate_arguments: bool = True
    memory_mb: int = 1024  # each worker's address space
    cpu_s: int = 600  # each worker's CPU seconds (it is replaced before it reaches them)
    file_mb: int = 1024  # largest file (episode DB) a worker may write
    disk_mib: int = 256  # all of a scenario's files together (a tmpfs of this size on its directory)
    unsafe: bool = False  # --unsafe-no-sandbox: rlimits only
    call_idle_exit_s: float = IDLE_EXIT_S  # a worker's call thread parked this long ends (`_call_threads`)


class _Died(Exception):
    """The worker's reply pipe closed: it exited or was killed. `in_flight`: calls it was running then."""

    def __init__(self, why: str, in_flight: int = 1) -> None:
        super().__init__(why)
        self.in_flight = in_flight


class _Gone(Exception):
    """The worker picked for a request ended before the request could start: pick another."""


class _Collateral(WorldError):
    """The worker died while this call ran beside others: any of them may have killed it."""


class _WorldWorker:
    """One world worker process of a scenario, started on first use. Calls run side by side in it; when one
    passes its timeout the worker *retires*: it takes no new call and is killed once the calls it still runs
    have ended, so a hung call costs its own episode only."""

    def __init__(self, pool: WorldWorkerPool, scenario: str) -> None:
        self.pool, self.scenario = pool, scenario
        self.pid: int | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.start_lock = asyncio.Lock()
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.queued = 0
        self.loaded = False
        self.ended = False  # died, was killed or retired: never used again
        self.retiring = False
        self.cpu_s = 0.0
        self.last_used = time.monotonic()
        self.stderr: deque[str] = deque(maxlen=20)
        self._ids = itertools.count(1)
        self._tasks: list[asyncio.Task[None]] = []
        self._death: asyncio.Future[str] | None = None

    @property
    def alive(self) -> bool:
        return self.pid is not None

    @property
    def usable(self) -> bool:
        return not self.ended and not self.retiring

    async def _start(self) -> None:
        directory = self.pool.directory(self.scenario)
        o = self.pool.options
        pid, (req_w, rep_r, err_r) = await self.pool.zygote.spawn({
            "dir": str(directory), "limits": {"memory_mb": o.memory_mb, "cpu_s": o.cpu_s, "file_mb": o.file_mb,
                                              "open_files": min(OPEN_FILES, _hard_open_files())},
            "call_idle_exit_s": o.call_idle_exit_s})
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_FRAME, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(rep_r, "rb", 0))
        errors = asyncio.StreamReader(loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(errors), os.fdopen(err_r, "rb", 0))
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), os.fdopen(req_w, "wb", 0))
        self.writer = asyncio.StreamWriter(transport, protocol, None, loop)
        self.pid, self.loaded, self.cpu_s = pid, False, 0.0
        self.pool.started += 1
        self._tasks = [loop.create_task(self._read(reader)), loop.create_task(self._drain(errors))]

    async def _read(self, reader: asyncio.StreamReader) -> None:
        """Hand each reply to the future of its id; a reply nobody waits for any more is dropped."""
        try:
            while True:
                reply = await read_frame(reader)
                rid = reply.pop("id", None) if isinstance(reply, dict) else None
                future = self.pending.pop(rid, None) if isinstance(rid, int) else None
                if future is None:
                    log.debug("world_reply_discarded", scenario=self.scenario, request=rid)
                    continue
                self.cpu_s = float(reply.pop("cpu_s", self.cpu_s) or 0)
                if not future.done():
                    future.set_result(reply)
        except (asyncio.IncompleteReadError, ConnectionError, FrameError, OSError, ValueError) as exc:
            why = type(exc).__name__
        in_flight = len(self.pending)
        self._forget()
        for future in self.pending.values():
            if not future.done():
                future.set_exception(_Died(why, in_flight))
        self.pending.clear()

    async def _drain(self, errors: asyncio.StreamReader) -> None:
        """Keep the worker's stderr flowing (a full pipe would block it) and remember its tail, whatever
        it writes (a line of any length included)."""
        tail = b""
        while chunk := await errors.read(1 << 16):
            *lines, tail = (tail + chunk).split(b"\n")
            tail = tail[-4096:]
            self.stderr.extend(line.decode(errors="replace").rstrip()[:300] for line in lines[-20:])
        if tail:
            self.stderr.append(tail.decode(errors="replace").rstrip()[:300])

    def _forget(self) -> None:
        self.pid, self.loaded, self.ended = None, False, True
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.pool.forget(self)

    def kill(self) -> None:
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        self.ended = True
        self._forget()

    def retire(self, why: str) -> None:
        """Take no new call; killed once the calls it still runs have ended (now, if there are none)."""
        if self.ended:
            return
        if not self.retiring:
            log.info("world_worker_retired", scenario=self.scenario, pid=self.pid, why=why, in_flight=len(self.pending))
        self.retiring = True
        self.pool.forget(self)
        self._settle()

    def _settle(self) -> None:
        if self.retiring and not self.pending and not self.ended:
            self.pool.replaced += 1
            self.kill()

    async def stop(self) -> None:
        """Ask the worker to exit (it holds no state), then kill it if it lingers."""
        pid, writer = self.pid, self.writer
        if pid is None or writer is None:
            self.ended = True
            return
        try:
            writer.write(encode({"op": "exit", "id": 0}))
            await asyncio.wait_for(writer.drain(), 1.0)
        except (ConnectionError, TimeoutError, RuntimeError):
            pass
        reader_task = self._tasks[0] if self._tasks else None
        if reader_task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(reader_task), 2.0)
        if self.pid == pid:
            self.kill()
        drain = self._tasks[1] if len(self._tasks) > 1 else None
        if drain is not None:  # its stderr tail is not needed any more: end the task here, not in the GC
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(drain), 0.5)
            drain.cancel()

    def _tail(self) -> str:
        lines = [ln for ln in self.stderr if ln.strip()]
        return f"; last output: {lines[-1]}" if lines else ""

    async def _died(self, pid: int | None, what: str, in_flight: int = 1) -> WorldError:
        if self._death is None:  # the first of its calls to learn of the death asks how it ended, once
            self._death = asyncio.ensure_future(self._death_text(pid))
        text = f"{what}: {await asyncio.shield(self._death)}"
        return _Collateral(text) if in_flight > 1 else WorldError(text)

    async def _death_text(self, pid: int | None) -> str:
        drain = self._tasks[1] if len(self._tasks) > 1 else None
        status = None if pid is None else await self.pool.zygote.status(pid)
        if drain is not None:  # the process is gone: its stderr ends soon; take its last lines
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(drain), 0.5)
        return f"the world worker died ({exit_text(status)}){self._tail()}; it is replaced"

    async def request(self, msg: dict[str, Any], limit_s: float, what: str, *, load: bool = True) -> dict[str, Any]:
        """Send one request (starting and loading the worker first if needed) and await its reply. Builds and
        imports run alone; tool calls run side by side."""
        try:
            if msg.get("op") == "build" or not self.alive or (load and not self.loaded):
                async with self.start_lock:
                    if self.ended or self.retiring:
                        raise _Gone(what)
                    if not self.alive:
                        await self._start()
                    if load and not self.loaded:
                        await self._load()
                    if msg.get("op") == "build":
                        reply = await self._exchange(msg, limit_s, what)
                        self.loaded = bool(reply.get("ok"))
                        return reply
            reply = await self._exchange(msg, limit_s, what)
            if self.cpu_s > RECYCLE_CPU_SHARE * self.pool.options.cpu_s:
                self.retire("cpu")  # replaced before its CPU limit could end a request
            return reply
        finally:
            self.last_used = time.monotonic()

    async def _load(self) -> None:
        msg = await self.pool.load_message(self.scenario)
        scratch = msg.pop("local")
        try:
            reply = await self._exchange(msg, self.pool.options.load_timeout_s,
                                         f"importing scenario {self.scenario!r}")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(scratch)  # the scratch copy (the worker may no longer remove files)
        if not reply.get("ok"):
            self.kill()
            raise WorldError(f"scenario {self.scenario!r} failed to import: {reply.get('error')}")
        self.loaded = True
        self.pool.imports += 1
        log.info("scenario_imported", scenario=self.scenario, pid=self.pid,
                 note="imported again: a second worker of the scenario, or a replacement")

    async def _exchange(self, msg: dict[str, Any], limit_s: float, what: str) -> dict[str, Any]:
        """Send one frame and await the reply with its id. A caller cancelled first leaves its reply to a task
        that drops it (or retires the worker when the call outlives its timeout)."""
        pid = self.pid
        if self.writer is None:  # it died between its start (or last reply) and this request
            raise await self._died(pid, what)
        rid = next(self._ids)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        wait_s = (len(self.pending) // CALL_THREADS + 1) * limit_s  # a round of the limit per full set ahead
        self.pending[rid] = future
        deadline = loop.time() + wait_s
        orphaned = False
        try:
            self.writer.write(encode({**msg, "id": rid}))
            await self.writer.drain()
            return await asyncio.wait_for(asyncio.shield(future), wait_s)
        except asyncio.CancelledError:
            if not future.done() and self.pid == pid:
                orphaned = True
                reap_later(self._await_orphan(rid, future, deadline))
            raise
        except TimeoutError:
            self.pending.pop(rid, None)
            self.retire(f"{what} timed out")
            queued = f" ({wait_s:g}s with the calls queued ahead of it)" if wait_s > limit_s else ""
            raise WorldError(f"{what} did not finish within {limit_s:g}s{queued}; its world worker was stopped "
                             "and is replaced") from None
        except _Died as exc:
            self.kill()
            raise await self._died(pid, what, exc.in_flight) from exc
        except (ConnectionError, RuntimeError) as exc:  # it died as this call was sent: maybe for another call
            self.kill()
            raise await self._died(pid, what, in_flight=2) from exc
        finally:
            if not orphaned:
                self.pending.pop(rid, None)
                self._settle()

    async def _await_orphan(self, rid: int, future: asyncio.Future[dict[str, Any]], deadline: float) -> None:
        """A cancelled request's reply is still coming: drop it when it does; retire the worker if it never does."""
        try:
            await asyncio.wait_for(future, max(0.0, deadline - asyncio.get_running_loop().time()))
        except TimeoutError:
            self.pending.pop(rid, None)
            self.retire("a cancelled call outlived its timeout")
        except Exception:  # the worker died: the next request starts another
            pass
        finally:
            self.pending.pop(rid, None)
            self._settle()


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
        self.workers: dict[str, list[_WorldWorker]] = {}
        self._specs: dict[str, LoadSpec] = {}
        self._quarantine: dict[str, asyncio.Semaphore] = {}
        self._suspects: dict[str, set[_WorldWorker]] = {}
        self._homes: dict[str, _WorldWorker] = {}  # episode DB -> the worker that keeps its connection
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

    def _pick(self, scenario: str, db: str | None = None) -> _WorldWorker:
        slots = self.workers.setdefault(scenario, [])
        usable = [w for w in slots if w.usable]
        best = min(usable, key=lambda w: w.queued, default=None)
        home = self._homes.get(db) if db is not None else None
        if home is not None and best is not None and home in usable and home.queued < best.queued + LOAD_PENALTY:
            return home  # it keeps the episode's connection: no connect and schema parse (~0.5 ms)
        if best is None or (best.queued >= LOAD_PENALTY and len(usable) < self.replicas):
            self._make_room()
            best = _WorldWorker(self, scenario)
            slots.append(best)
        return best

    def forget(self, worker: _WorldWorker) -> None:
        """`worker` takes no new request (it died, was stopped, or retires)."""
        slots = self.workers.get(worker.scenario)
        if slots is not None and worker in slots:
            slots.remove(worker)
        self._suspects.get(worker.scenario, set()).discard(worker)

    def _suspect_worker(self, scenario: str) -> _WorldWorker:
        """A worker of its own for one call run again after a death (it retires after that call)."""
        w = _WorldWorker(self, scenario)
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
            except _Gone:
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
        except _Collateral as exc:
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
