"""The runtime's handle on the world zygote: start it, ask it for world workers and for how they ended."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from typing import Any

from awm_runtime._errors import WorldError
from awm_runtime.isolation import kill_process, mark_private, module_code, scrubbed_env

START_TIMEOUT_S = 60.0
_REAPERS: set[asyncio.Task[Any]] = set()


def exit_text(status: int | None) -> str:
    if status is None:
        return "exit status unknown"
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class Zygote:
    """The runtime's handle on the zygote: start it, ask it for workers and for how they ended."""

    def __init__(self, module: str, unsafe: bool) -> None:
        self.module, self.unsafe = module, unsafe
        self.proc: asyncio.subprocess.Process | None = None
        self.sock: socket.socket | None = None
        self.lock = asyncio.Lock()
        self.hello: dict[str, Any] = {}
        # The first zygote's user and mount namespaces, kept open: a zygote started after it joins them, so the
        # scenarios' tmpfs mounts (their disk quotas) outlive a zygote that died. Closed by release_namespaces().
        self.namespaces: list[int] = []
        self.root: int | None = None  # the root of that mount namespace: /proc/self/fd/<root>/<dir> is <dir> there

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def _ensure(self) -> socket.socket:
        if self.alive and self.sock is not None:
            return self.sock
        mark_private()  # before any dataset code runs: our memory and environment are then unreadable to it
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        join = ["--join", ",".join(map(str, self.namespaces))] if self.namespaces else []
        try:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-I", "-c", module_code(self.module), "--parent", str(os.getpid()),
                "--control", str(theirs.fileno()), *(["--unsafe"] if self.unsafe else []), *join,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL, env=scrubbed_env(), start_new_session=True,
                pass_fds=(theirs.fileno(), *self.namespaces))
        finally:
            theirs.close()
        ours.settimeout(START_TIMEOUT_S)
        try:
            data, fds, _, _ = await asyncio.to_thread(socket.recv_fds, ours, 1 << 16, 3)
            self.hello = json.loads(data or b"{}")
        except (OSError, ValueError) as exc:
            ours.close()
            raise WorldError(f"the world zygote did not start ({type(exc).__name__})") from None
        if fds and not self.hello.get("quota_off"):  # its namespaces (none when it joined ours), then its root
            *namespaces, root = fds
            self.namespaces = self.namespaces or namespaces
            if self.root is None:
                self.root = root
            else:
                os.close(root)
        else:
            for fd in fds:
                os.close(fd)
        if not self.hello.get("ready"):
            ours.close()
            raise WorldError("the world zygote did not start")
        self.sock = ours
        return ours

    async def spawn(self, spec: dict[str, Any]) -> tuple[int, list[int]]:
        """A new worker's pid and its pipes (requests, replies, stderr). If the caller is cancelled
        meanwhile, the worker that arrives anyway is killed and its pipes closed."""
        await self.lock.acquire()
        try:
            sock = await self._ensure()
        except BaseException:
            self.lock.release()
            raise

        def go() -> tuple[int, list[int]]:
            sock.send(json.dumps({"op": "spawn", **spec}).encode())
            data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 3)
            reply = json.loads(data or b"{}")
            if not reply.get("ok") or len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                raise OSError(f"the world zygote could not start a worker: {reply.get('error')}")
            return int(reply["pid"]), fds

        task = asyncio.ensure_future(asyncio.to_thread(go))
        task.add_done_callback(lambda _: self.lock.release())  # the socket is free once the exchange is over
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(_discard_worker)
            raise
        except OSError as exc:
            self.kill()
            raise WorldError(f"starting a world worker failed ({exc})") from None

    async def mount(self, directory: str, mib: int, *, resize: bool = False) -> str | None:
        """A tmpfs of `mib` MiB on `directory` in the zygote's mount namespace, with its `episodes/`: the path by
        which this process reaches it (/proc/self/fd/<root>/<directory>), or None when the zygote has no mount
        namespace (`quota_off` in its hello says why). With `resize`, the tmpfs already on `directory` gets
        `mib` MiB instead. Raises WorldError if the mount failed. `directory` is absolute (the zygote's working
        directory is not ours)."""
        async with self.lock:
            sock = await self._ensure()
            if self.hello.get("quota_off") or self.root is None:
                return None

            def go() -> None:
                sock.send(json.dumps({"op": "mount", "dir": directory, "mib": mib, "resize": resize}).encode())
                reply = json.loads(sock.recv(1 << 16) or b"{}")
                if not reply.get("ok"):
                    raise OSError(reply.get("error") or "the world zygote did not answer")

            # Shielded: a caller cancelled mid-exchange must not leave its reply for the next one to read.
            exchange = asyncio.ensure_future(asyncio.to_thread(go))
            try:
                await asyncio.shield(exchange)
            except asyncio.CancelledError:
                await asyncio.wait([exchange])  # holding the lock until the socket is free again
                if not exchange.cancelled():
                    exchange.exception()  # retrieved: the caller is gone, and so is its interest in it
                raise
            except (OSError, ValueError) as exc:
                raise WorldError(f"the disk quota of {directory} could not be set up ({exc})") from None
            return f"/proc/self/fd/{self.root}{directory}"

    async def status(self, pid: int) -> int | None:
        async with self.lock:
            if not self.alive or self.sock is None:
                return None
            sock = self.sock

            def go() -> int | None:
                sock.send(json.dumps({"op": "status", "pid": pid}).encode())
                status = json.loads(sock.recv(1 << 16) or b"{}").get("status")
                return None if status is None else int(status)

            try:
                return await asyncio.to_thread(go)
            except (OSError, ValueError):
                return None

    def kill(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None and self.proc.returncode is None:
            kill_process(self.proc)
            reap_later(self.proc.wait())

    def release_namespaces(self) -> None:
        """Close the namespaces' descriptors: once the zygote and its workers are gone, so are the mounts."""
        for fd in [*self.namespaces, *([] if self.root is None else [self.root])]:
            os.close(fd)
        self.namespaces, self.root = [], None

    async def aclose(self) -> None:
        proc = self.proc
        self.kill()
        self.release_namespaces()
        if proc is not None:
            await proc.wait()


def _discard_worker(task: asyncio.Future[tuple[int, list[int]]]) -> None:
    """A worker started for a caller that was cancelled meanwhile: kill it, close its pipes."""
    if task.cancelled() or task.exception() is not None:
        return
    pid, fds = task.result()
    for fd in fds:
        os.close(fd)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def reap_later(coro: Any) -> None:
    task = asyncio.get_running_loop().create_task(coro)
    _REAPERS.add(task)  # the loop keeps only weak references to tasks
    task.add_done_callback(_REAPERS.discard)
