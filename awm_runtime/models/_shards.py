"""Model-call shards: litellm in N child processes, so its per-call CPU (several ms: request
building in a thread, logging, cost lookups) does not saturate the event loop that runs episodes.

The parent keeps limits, retries and accounting; a shard makes one attempt per request. Frames
are a 4-byte length and an orjson array over a socketpair:
    request  [id, route, messages, params, timeout_s]      cancel [id]
    reply    [id, "ok", reply]  or  [id, "err", kind, message, detail, retry_after_s]
Keys never cross: a shard inherits the environment and reads the variable a route names.
A shard exits when its socket closes, so it never outlives the run that started it.
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

from awm_runtime.models._exceptions import AttemptError
from awm_runtime.models._reply import ModelReply
from awm_runtime.models._transport import IN_PROCESS, Route, shardable, use_transport

if TYPE_CHECKING:
    from awm_runtime.models._registry import ModelConfig

_LEN = struct.Struct(">I")


async def _read_frame(reader: asyncio.StreamReader) -> Any:
    size = _LEN.unpack(await reader.readexactly(4))[0]
    return orjson.loads(await reader.readexactly(size))


def _frame(payload: Any) -> bytes:
    body = orjson.dumps(payload)
    return _LEN.pack(len(body)) + body


class _Shard:
    def __init__(self, proc: asyncio.subprocess.Process, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.proc, self.reader, self.writer = proc, reader, writer
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.alive = True
        self.listener = asyncio.create_task(self._listen(), name=f"shard-{proc.pid}")

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
                if not future.done():  # retryable: the next attempt goes to a live shard
                    future.set_exception(AttemptError("a model-call shard process exited", kind="connection",
                                                      detail="model-call shard process exited"))
            self.pending.clear()


class ShardPool:
    """A Transport that spreads attempts over child processes, least busy first."""

    def __init__(self) -> None:
        self.shards: list[_Shard] = []
        self._ids = itertools.count()

    async def start(self, n: int) -> None:
        for _ in range(n):
            ours, theirs = socket.socketpair()
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-c", "from awm_runtime.models._shards import serve; serve()", str(theirs.fileno()),
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
            theirs.close()
            reader, writer = await asyncio.open_unix_connection(sock=ours, limit=1 << 26)
            self.shards.append(_Shard(proc, reader, writer))

    async def attempt(self, route: Route, messages: list[dict[str, Any]], params: dict[str, Any],
                      timeout_s: float) -> ModelReply:
        live = [s for s in self.shards if s.alive]
        if not live:
            raise AttemptError(f"{route.role} model {route.alias!r} failed (fatal): every model-call shard exited",
                               kind="fatal", role=route.role, alias=route.alias, detail="every model-call shard exited")
        shard = min(live, key=lambda s: len(s.pending))
        call_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        shard.pending[call_id] = future
        shard.writer.write(_frame([call_id, route.to_wire(), messages, params, timeout_s]))
        try:
            frame = await future
        except asyncio.CancelledError:
            if shard.pending.pop(call_id, None) is not None and shard.alive:
                shard.writer.write(_frame([call_id]))  # stop the shard's attempt too
            raise
        except AttemptError as exc:
            raise AttemptError(str(exc), kind=exc.kind, role=route.role, alias=route.alias, detail=exc.detail) from None
        if frame[1] == "ok":
            return ModelReply.from_wire(frame[2])
        _, _, kind, message, detail, retry_after = frame
        raise AttemptError(message, kind=kind, role=route.role, alias=route.alias, retry_after_s=retry_after,
                           detail=detail)

    async def stop(self) -> None:
        for shard in self.shards:
            shard.writer.close()
        for shard in self.shards:
            try:
                await asyncio.wait_for(shard.proc.wait(), 10)
            except TimeoutError:
                shard.proc.kill()
                await shard.proc.wait()
            shard.listener.cancel()
        self.shards.clear()


_pool: ShardPool | None = None


def auto_procs() -> int:
    """The shard count awm-run uses when not told (only runs with a role on the litellm path start any).

    Measured on 2 cores (`awm-bench routing --litellm`): litellm costs ~5.5 ms of CPU per call, so
    one process reached 71% of ideal at 256 calls x 2 s and 69% at 1,000 x 5 s; two shards, 100% and 96%.
    """
    cpus = os.cpu_count() or 1
    return 0 if cpus < 2 else min(4, max(2, cpus // 2))


async def start_shards(n: int | None = None, configs: Iterable[ModelConfig] | None = None) -> int:
    """Send the litellm calls of every client through `n` shard processes (None: `auto_procs()`).
    With `configs`, start none unless one of them calls through litellm. Returns how many started."""
    global _pool
    await stop_shards()
    n = auto_procs() if n is None else n
    if configs is not None and not any(shardable(c.model, c.api_base, c.transport) for c in configs):
        n = 0
    if n > 0:
        _pool = ShardPool()
        await _pool.start(n)
        use_transport(_pool)
    return n


async def stop_shards() -> None:
    global _pool
    use_transport(None)
    if _pool is not None:
        pool, _pool = _pool, None
        await pool.stop()


async def shutdown() -> None:
    """End what the model layer holds open in this event loop: shard processes and HTTP sessions."""
    from awm_runtime.models._http import close_sessions

    await stop_shards()
    await close_sessions()


def shard_pids() -> list[int]:
    return [s.proc.pid for s in _pool.shards] if _pool is not None else []


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
            out = [call_id, "err", "fatal", f"model-call shard: {type(exc).__name__}: {exc}", str(exc)[:300], None]
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
    """Entry point of a shard process: `serve()` with the socket's fd as the last argument."""
    asyncio.run(_serve(int(sys.argv[-1])))
