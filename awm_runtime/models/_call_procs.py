"""Model-call processes: litellm in N child processes, so its per-call CPU (several ms: request
building in a thread, logging, cost lookups) does not saturate the event loop that runs episodes.

The parent keeps limits, retries and accounting; a call proc makes one attempt per request. Frames
are a 4-byte length and an orjson array over a socketpair:
    request  [id, route, messages, params, timeout_s]      cancel [id]
    reply    [id, "ok", reply]  or  [id, "err", kind, message, detail, retry_after_s]
Keys never cross: a call proc inherits the environment and reads the variable a route names.
A call proc exits when its socket closes, so it never outlives the run that started it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import struct
import subprocess
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

from awm_runtime._encodable import dumps_encodable
from awm_runtime.isolation import kill_process
from awm_runtime.models._exceptions import AttemptError
from awm_runtime.models._local import stop_local_servers
from awm_runtime.models._reply import ModelReply
from awm_runtime.models._route import Route
from awm_runtime.models._transport import IN_PROCESS, use_transport, uses_call_procs

if TYPE_CHECKING:
    from awm_runtime.models._registry import ModelConfig

_LEN = struct.Struct(">I")


async def _read_frame(reader: asyncio.StreamReader) -> Any:
    size = _LEN.unpack(await reader.readexactly(4))[0]
    return orjson.loads(await reader.readexactly(size))


def _frame(payload: Any) -> bytes:
    body, _ = dumps_encodable(payload)  # a lone surrogate from the agent travels as U+FFFD
    return _LEN.pack(len(body)) + body


class _CallProc:
    def __init__(self, proc: asyncio.subprocess.Process, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.proc, self.reader, self.writer = proc, reader, writer
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.alive = True
        self.listener = asyncio.create_task(self._listen(), name=f"call-proc-{proc.pid}")

    async def _listen(self) -> None:
        try:
            while True:
                frame = await _read_frame(self.reader)
                future = self.pending.pop(frame[0], None)
                if future is not None and not future.done():
                    future.set_result(frame)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.alive = False
            for future in self.pending.values():
                if not future.done():  # retryable: the next attempt goes to a live call proc
                    future.set_exception(AttemptError("a model-call process exited", kind="connection",
                                                      detail="model-call process exited"))
            self.pending.clear()


class ShardPool:
    """A Transport that spreads attempts over child processes, least busy first."""

    def __init__(self) -> None:
        self.procs: list[_CallProc] = []
        self._ids = itertools.count()

    async def start(self, n: int) -> None:
        for _ in range(n):
            ours, theirs = socket.socketpair()
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-c", "from awm_runtime.models._call_procs import serve; serve()", str(theirs.fileno()),
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
            theirs.close()
            reader, writer = await asyncio.open_unix_connection(sock=ours, limit=1 << 26)
            self.procs.append(_CallProc(proc, reader, writer))

    async def attempt(self, route: Route, messages: list[dict[str, Any]], params: dict[str, Any],
                      timeout_s: float) -> ModelReply:
        live = [s for s in self.procs if s.alive]
        if not live:
            why = "every model-call process exited"
            raise AttemptError(f"{route.role} model {route.alias!r} failed (fatal): {why}",
                               kind="fatal", role=route.role, alias=route.alias, detail=why)
        proc = min(live, key=lambda s: len(s.pending))
        call_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        proc.pending[call_id] = future
        proc.writer.write(_frame([call_id, route.to_wire(), messages, params, timeout_s]))
        try:
            frame = await future
        except asyncio.CancelledError:
            if proc.pending.pop(call_id, None) is not None and proc.alive:
                proc.writer.write(_frame([call_id]))  # stop the call proc's attempt too
            raise
        except AttemptError as exc:
            raise AttemptError(str(exc), kind=exc.kind, role=route.role, alias=route.alias, detail=exc.detail) from None
        if frame[1] == "ok":
            return ModelReply.from_wire(frame[2])
        _, _, kind, message, detail, retry_after = frame
        raise AttemptError(message, kind=kind, role=route.role, alias=route.alias, retry_after_s=retry_after,
                           detail=detail)

    async def stop(self) -> None:
        for proc in self.procs:
            proc.writer.close()
        for proc in self.procs:
            try:
                await asyncio.wait_for(proc.proc.wait(), 10)
            except TimeoutError:
                kill_process(proc.proc)
                await proc.proc.wait()
            proc.listener.cancel()
        self.procs.clear()


_pool: ShardPool | None = None


def auto_procs() -> int:
    """The call-proc count awm-run uses when not told (only runs with a role on the litellm path start any).

    Measured on 2 cores (`awm-bench routing --litellm`): litellm costs ~5.5 ms of CPU per call, so
    one process reached 71% of ideal at 256 calls x 2 s and 69% at 1,000 x 5 s; two call procs, 100% and 96%.
    """
    cpus = os.cpu_count() or 1
    return 0 if cpus < 2 else min(4, max(2, cpus // 2))


async def start_call_procs(n: int | None = None, configs: Iterable[ModelConfig] | None = None) -> int:
    """Send the litellm calls of every client through `n` model-call processes (None: `auto_procs()`).
    With `configs`, start none unless one of them calls through litellm. Returns how many started."""
    global _pool
    await stop_call_procs()
    n = auto_procs() if n is None else n
    if configs is not None and not any(uses_call_procs(c.model, c.api_base, c.transport) and not c.tito
                                          for c in configs):
        n = 0
    if n > 0:
        _pool = ShardPool()
        await _pool.start(n)
        use_transport(_pool)
    return n


async def stop_call_procs() -> None:
    global _pool
    use_transport(None)
    if _pool is not None:
        pool, _pool = _pool, None
        await pool.stop()


async def shutdown() -> None:
    """End what the model layer holds open in this event loop: model-call processes, HTTP sessions, and
    the local model servers this process started."""
    from awm_runtime.models._http import close_sessions

    await stop_call_procs()
    await close_sessions()
    await stop_local_servers()


def call_proc_pids() -> list[int]:
    return [s.proc.pid for s in _pool.procs] if _pool is not None else []


# -- the child --------------------------------------------------------------------------------------


async def _serve(fd: int) -> None:
    from awm_runtime.models._litellm import litellm

    reader, writer = await asyncio.open_unix_connection(sock=socket.socket(fileno=fd), limit=1 << 26)
    litellm()  # import now (seconds), not inside the first call's timeout
    running: dict[int, asyncio.Task[None]] = {}

    async def one(call_id: int, route: list[Any], messages: list[dict[str, Any]], params: dict[str, Any],
                  timeout_s: float) -> None:
        try:
            reply = await IN_PROCESS.attempt(Route(*route), messages, params, timeout_s)
            out: list[Any] = [call_id, "ok", reply.to_wire()]
        except AttemptError as exc:
            out = [call_id, "err", exc.kind, str(exc), exc.detail, exc.retry_after_s]
        except Exception as exc:  # a bug here must reach the parent as a failed call, not hang it
            out = [call_id, "err", "fatal", f"model-call process: {type(exc).__name__}: {exc}", str(exc)[:300], None]
        finally:
            running.pop(call_id, None)
        writer.write(_frame(out))

    try:
        while True:
            frame = await _read_frame(reader)
            if len(frame) == 1:
                task = running.pop(frame[0], None)
                if task is not None:
                    task.cancel()
                continue
            running[frame[0]] = asyncio.create_task(one(*frame))
    except (asyncio.IncompleteReadError, ConnectionError):
        pass  # the parent closed the socket or died: stop
    finally:
        for task in running.values():
            task.cancel()


def serve() -> None:
    """Entry point of a model-call process: `serve()` with the socket's fd as the last argument."""
    from awm_runtime.isolation import mark_private

    mark_private()  # it holds the keys it calls with
    asyncio.run(_serve(int(sys.argv[-1])))
