"""The runtime's handle on one world worker process (`WorldWorker`): started on first use by its pool, one reader task
handing each reply to the future of its request id, calls side by side, retirement after a timeout, and how it died.
The pool that routes requests to these handles is `_world_worker_pool`."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import resource
import signal
import time
from collections import deque
from typing import Any, Protocol

from awm_runtime._errors import WorldError
from awm_runtime._log import get_logger
from awm_runtime.isolation import FrameError, Frames, encode
from awm_runtime.worlds._host import IDLE_CONNECTIONS, SPARE_FILES
from awm_runtime.worlds._options import PoolOptions
from awm_runtime.worlds._world_worker_serve import CALL_THREADS
from awm_runtime.worlds._world_zygote import Zygote, exit_text, reap_later

log = get_logger("awm_runtime.worlds")

OPEN_FILES = IDLE_CONNECTIONS + SPARE_FILES  # a world worker: its episodes' kept connections, and the rest
RECYCLE_CPU_SHARE = 0.8  # a worker that has used this share of its CPU limit is replaced between requests


def _hard_open_files() -> int:
    """This process's hard open-file limit: a worker cannot raise its own past it."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return OPEN_FILES if hard == resource.RLIM_INFINITY else int(hard)


class Pool(Protocol):
    """What a worker's handle needs of its pool (a `WorldWorkerPool`): limits, the zygote, the scenario's directory
    and import, and the counters it keeps."""

    options: PoolOptions
    zygote: Zygote
    started: int
    replaced: int
    imports: int

    def directory(self, scenario: str) -> str:
        """The scenario's directory, as its workers see it."""
        ...

    async def load_message(self, scenario: str) -> dict[str, Any]:
        """An import of the scenario for a further worker."""
        ...

    def forget(self, worker: WorldWorker) -> None:
        """`worker` takes no new request."""
        ...


class Died(Exception):
    """The worker's reply pipe closed: it exited or was killed. `in_flight`: calls it was running then."""

    def __init__(self, why: str, in_flight: int = 1) -> None:
        super().__init__(why)
        self.in_flight = in_flight


class _Replies(asyncio.Protocol):
    """The worker's reply pipe: each whole frame goes to `on_reply` as it arrives (no reader task between the pipe
    and the request's future); `closed` gets why the pipe ended (EOF, an error, a frame that is not one)."""

    def __init__(self, on_reply: Any, closed: asyncio.Future[str]) -> None:
        """`on_reply(message)` for each whole frame; `closed` resolves with why the pipe ended."""
        self.on_reply, self.closed = on_reply, closed
        self.frames = Frames()
        self.transport: asyncio.ReadTransport | None = None
        self.why = ""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Keep the pipe's transport, to close it on a broken frame."""
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        """Hand each frame completed by `data` on; a broken frame closes the pipe (the worker is then dead)."""
        if self.why:
            return
        try:
            for reply in self.frames.feed(data):
                self.on_reply(reply)
        except (FrameError, ValueError, TypeError) as exc:  # a worker that sends what is not a reply is broken
            self.why = type(exc).__name__
            if self.transport is not None:
                self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        """Say why the pipe ended: a broken frame, the error, or EOF (`IncompleteReadError`)."""
        if not self.closed.done():
            self.closed.set_result(self.why or (type(exc).__name__ if exc is not None else "IncompleteReadError"))


def _expire(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


class Gone(Exception):
    """The worker picked for a request ended before the request could start: pick another."""


class Collateral(WorldError):
    """The worker died while this call ran beside others: any of them may have killed it."""


class WorldWorker:
    """One world worker process of a scenario, started on first use. Calls run side by side in it; when one
    passes its timeout the worker *retires*: it takes no new call and is killed once the calls it still runs
    have ended, so a hung call costs its own episode only."""

    def __init__(self, pool: Pool, scenario: str) -> None:
        self.pool, self.scenario = pool, scenario
        self.pid: int | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.loop: asyncio.AbstractEventLoop | None = None  # the loop of its pipes, once started
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
        self._drainer: asyncio.Task[None] | None = None  # keeps its stderr pipe flowing
        self._closed: asyncio.Future[str] | None = None  # its reply pipe ended (it exited or was killed): why
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
        closed: asyncio.Future[str] = loop.create_future()
        closed.add_done_callback(self._lost)
        await loop.connect_read_pipe(lambda: _Replies(self._reply, closed), os.fdopen(rep_r, "rb", 0))
        errors = asyncio.StreamReader(loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(errors), os.fdopen(err_r, "rb", 0))
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), os.fdopen(req_w, "wb", 0))
        self.writer = asyncio.StreamWriter(transport, protocol, None, loop)
        self.loop = loop  # its pipes' loop, kept: asyncio.get_running_loop() costs a getpid system call a call
        self.pid, self.loaded, self.cpu_s = pid, False, 0.0
        self.pool.started += 1
        self._closed, self._drainer = closed, loop.create_task(self._drain(errors))

    def _reply(self, reply: Any) -> None:
        """Hand a reply to the future of its id; a reply nobody waits for any more is dropped."""
        rid = reply.pop("id", None) if isinstance(reply, dict) else None
        future = self.pending.pop(rid, None) if isinstance(rid, int) else None
        if future is None:
            log.debug("world_reply_discarded", scenario=self.scenario, request=rid)
            return
        self.cpu_s = float(reply.pop("cpu_s", self.cpu_s) or 0)
        if not future.done():
            future.set_result(reply)

    def _lost(self, closed: asyncio.Future[str]) -> None:
        """The reply pipe ended: the worker is gone, and each call it was running fails with `Died`."""
        why = closed.result()
        in_flight = len(self.pending)
        self._forget()
        for future in self.pending.values():
            if not future.done():
                future.set_exception(Died(why, in_flight))
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
        if self._closed is not None:  # it exits: its reply pipe ends
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._closed), 2.0)
        if self.pid == pid:
            self.kill()
        drain = self._drainer
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
        return Collateral(text) if in_flight > 1 else WorldError(text)

    async def _death_text(self, pid: int | None) -> str:
        drain = self._drainer
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
                        raise Gone(what)
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
        that drops it (or retires the worker when the call outlives its timeout).

        The reply's future is awaited as it is, with a timer on it (no `wait_for`, no `shield`: each would add
        futures and callbacks to every call); the write is waited on only when the pipe is full or closing."""
        pid, writer = self.pid, self.writer
        if writer is None:  # it died between its start (or last reply) and this request
            raise await self._died(pid, what)
        rid = next(self._ids)
        loop = self.loop if self.loop is not None else asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        wait_s = (len(self.pending) // CALL_THREADS + 1) * limit_s  # a round of the limit per full set ahead
        self.pending[rid] = future
        deadline = loop.time() + wait_s
        timer = loop.call_at(deadline, _expire, future)
        orphaned = False
        try:
            writer.write(encode({**msg, "id": rid}))
            transport = writer.transport
            if transport.is_closing() or transport.get_write_buffer_size():
                await writer.drain()
            return await future
        except asyncio.CancelledError:
            # Cancelled while its reply is still to come (awaiting the future cancelled it): a fresh one takes the
            # reply, and a task drops it when it comes.
            if self.pid == pid and self.pending.get(rid) is future:
                orphaned = True
                self.pending[rid] = orphan = loop.create_future()
                reap_later(self._await_orphan(rid, orphan, deadline))
            raise
        except TimeoutError:
            self.pending.pop(rid, None)
            self.retire(f"{what} timed out")
            queued = f" ({wait_s:g}s with the calls queued ahead of it)" if wait_s > limit_s else ""
            raise WorldError(f"{what} did not finish within {limit_s:g}s{queued}; its world worker was stopped "
                             "and is replaced") from None
        except Died as exc:
            self.kill()
            raise await self._died(pid, what, exc.in_flight) from exc
        except (ConnectionError, RuntimeError) as exc:  # it died as this call was sent: maybe for another call
            self.kill()
            raise await self._died(pid, what, in_flight=2) from exc
        finally:
            timer.cancel()
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

