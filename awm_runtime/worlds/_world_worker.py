"""The world zygote and its world workers: scenario code runs here, one scenario per worker.

`python -I -m awm_runtime.worlds._world_worker --parent PID --control FD` is the zygote (started with `-c` code
that runs this module from the runtime's own copy of the package). It
imports what generated FastAPI apps use, enters its namespaces (`isolation.enter_namespaces`),
freezes the collector, then forks a world worker for each `spawn` on its control socket (a
SOCK_SEQPACKET socket; the worker's pipes go back to the runtime with the reply). A fork costs
milliseconds where a fresh interpreter would cost the imports again.

A world worker confines itself before it runs any scenario code: Landlock lets it read the
interpreter's files and its scenario's directory and write only there; after its scenario is
built or imported it narrows to writing existing files in the `episodes/` folder. It speaks
frames with request ids on its pipes; what scenario code prints goes to the stderr pipe. It
dies with the zygote, which dies with the runtime, and it holds no episode state: an episode's
state is its DB file, so a replacement worker can serve any episode of the scenario.

What a worker does with each request is `_world_worker_serve.Worker`'s. Tool calls run side by side, each on one
of up to `CALL_THREADS` threads with its own event loop:
generated handlers are async functions that block on SQLite, so one loop would serve them one at a
time and a slow or hung call would hold up every episode of the scenario (issue 31). They run one
at a time while each uses the CPU, as threads fighting over the GIL cost CPU (`_call_threads`). A call that comes
when no other runs or waits runs in place on the main thread, with no hand-off; if it turns out to wait or hog the
CPU, a reader thread takes the requests that come meanwhile to the call threads (`_requests`). Either way the
handler's coroutine runs its first step without the loop's machinery, the loop taking over only if it suspends
(`_drive`). Before the worker serves, every descriptor its scenario's code opened while importing is pointed at
/dev/null.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import gc
import importlib
import json
import os
import resource
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

from awm_runtime._malloc import steady_malloc
from awm_runtime.isolation import (
    Confinement,
    Limits,
    checkpoint_coverage,
    confine,
    die_with_parent,
    enter_mount_namespace,
    enter_namespaces,
    join_namespaces,
    mount_quota,
    namespace_fds,
    resize_quota,
    yield_cpu,
)
from awm_runtime.isolation import prepare as prepare_confinement
from awm_runtime.worlds._call_threads import IDLE_EXIT_S
from awm_runtime.worlds._host import keep_within
from awm_runtime.worlds._world_worker_serve import EPISODES, Worker, describe

# What generated FastAPI apps import: loaded once in the zygote, so a worker imports little.
PRELOAD = ("fastapi", "fastapi.responses", "fastapi.encoders", "fastapi.openapi.utils", "pydantic", "sqlalchemy",
           "sqlalchemy.orm", "sqlalchemy.pool", "sqlalchemy.dialects.sqlite", "starlette.routing", "email_validator",
           "uvicorn", "jsonschema", "anyio", "anyio._backends._asyncio", "datetime", "decimal", "enum", "uuid",
           "json", "re", "typing", "hashlib", "secrets", "random", "math")
_M_ARENA_MAX = -8
THREAD_STACK = 4 << 20  # 32 threads x 8 MiB (the default) would take a quarter of the address space limit


def _worker_main(fds: tuple[int, int, int], spec: dict[str, Any], zygote: int, unsafe: bool) -> None:
    """In a fresh fork of the zygote: keep three pipes, confine, serve."""
    in_fd, out_fd, err_fd = fds
    die_with_parent(zygote)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(err_fd, 1)
    os.dup2(err_fd, 2)
    keep = sorted({0, 1, 2, in_fd, out_fd})
    for low, high in zip(keep, [*keep[1:], 1 << 16], strict=True):
        if high > low + 1:  # os.closerange(n, n) would close every fd from n up
            os.closerange(low + 1, high)
    directory = Path(spec["dir"])
    episodes = directory / EPISODES
    os.environ["SQLITE_TMPDIR"] = str(episodes)
    os.environ.pop("DATABASE_PATH", None)
    limits = Limits(**spec["limits"])
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    confine(Confinement(limits, creatable=(str(directory),), threads=True), unsafe=unsafe)
    keep_within(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    final = Confinement(limits, readable=(str(directory),), writable=(str(episodes),), threads=True)
    threading.stack_size(THREAD_STACK)
    loop = asyncio.new_event_loop()  # its self-pipe socketpair is made now, before scenario code
    asyncio.set_event_loop(loop)
    idle_exit_s = float(spec.get("call_idle_exit_s", IDLE_EXIT_S))
    Worker(loop, directory, final, unsafe, idle_exit_s).serve(in_fd, out_fd)


def _in_worker(fds: tuple[int, int, int], theirs: tuple[int, int, int], spec: dict[str, Any], zygote: int,
               unsafe: bool) -> None:
    """The fork's whole life: a worker that cannot confine itself never runs scenario code (it exits 70, saying
    why on its stderr pipe). A function of its own, so that coverage, restarted in the fork, sees it run."""
    code = 0
    try:
        for fd in theirs:
            os.close(fd)
        _worker_main(fds, spec, zygote, unsafe)
    except BaseException as exc:
        with contextlib.suppress(Exception):
            os.write(2, f"world worker failed: {describe(exc)}\n".encode())
        code = 70
    finally:
        os._exit(code)


class Zygote:
    """Forks world workers on request; reports how they ended."""

    def __init__(self, control: socket.socket, parent: int, unsafe: bool) -> None:
        self.control = control
        self.parent = parent
        self.unsafe = unsafe
        self.ended: dict[int, int] = {}

    def _reap(self, block_for: int | None = None, wait_s: float = 2.0) -> None:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid:
                self.ended[pid] = status
                while len(self.ended) > 4096:
                    self.ended.pop(next(iter(self.ended)))
                continue
            if block_for is None or block_for in self.ended or time.monotonic() > deadline:
                return
            time.sleep(0.005)

    def spawn(self, spec: dict[str, Any]) -> None:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        err_r, err_w = os.pipe()
        zygote = os.getpid()
        pid = os.fork()
        if pid == 0:
            self.control.close()
            _in_worker((req_r, rep_w, err_w), (req_w, rep_r, err_r), spec, zygote, self.unsafe)
        for fd in (req_r, rep_w, err_w):
            os.close(fd)
        try:
            socket.send_fds(self.control, [json.dumps({"ok": True, "pid": pid}).encode()], [req_w, rep_r, err_r])
        finally:
            for fd in (req_w, rep_r, err_r):
                os.close(fd)

    def mount(self, msg: dict[str, Any]) -> None:
        """A tmpfs of msg["mib"] MiB on a scenario's directory, with its `episodes/`; with msg["resize"], the size
        of the tmpfs already there set to msg["mib"] MiB."""
        try:
            if msg.get("resize"):
                resize_quota(str(msg["dir"]), int(msg["mib"]))
            else:
                fd = mount_quota(str(msg["dir"]), int(msg["mib"]))
                try:
                    os.mkdir(EPISODES, 0o755, dir_fd=fd)
                finally:
                    os.close(fd)
        except OSError as exc:
            self.control.send(json.dumps({"ok": False, "error": str(exc)}).encode())
            return
        self.control.send(json.dumps({"ok": True}).encode())

    def serve(self) -> None:
        while True:
            try:
                data = self.control.recv(1 << 16)
            except InterruptedError:
                continue
            if not data:
                return
            msg = json.loads(data)
            self._reap()
            if msg.get("op") == "spawn":
                self.spawn(msg)
            elif msg.get("op") == "mount":
                self.mount(msg)
            elif msg.get("op") == "status":
                pid = int(msg["pid"])
                self._reap(block_for=pid)
                self.control.send(json.dumps({"ok": True, "status": self.ended.pop(pid, None)}).encode())
            else:
                return
            checkpoint_coverage()  # only in a measured test run: the runtime ends this process with SIGKILL


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--control", type=int, required=True)
    parser.add_argument("--unsafe", action="store_true")
    parser.add_argument("--join", default="", help="namespace descriptors of an earlier zygote, comma-separated")
    args = parser.parse_args()
    die_with_parent(args.parent)
    control = socket.socket(fileno=args.control)
    yield_cpu()  # scenarios run below the runtime's loop, which serves every episode
    # Before any import can start a thread: namespaces, then a mount namespace for the scenarios' disk quotas.
    namespaces, quota, ns_fds = "", "the world runs with --unsafe-no-sandbox (rlimits only)", []
    if args.join:
        namespaces, quota = join_namespaces([int(fd) for fd in args.join.split(",")]), ""
    elif not args.unsafe and (namespaces := enter_namespaces()):
        try:
            enter_mount_namespace()
            ns_fds, quota = namespace_fds(user=namespaces.startswith("user")), ""
        except OSError as exc:
            quota = f"no mount namespace ({exc})"
    elif not args.unsafe:
        quota = "the kernel refused new namespaces (no user namespace, and not root)"
    if not args.unsafe:
        prepare_confinement()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(_M_ARENA_MAX, 2)  # each malloc arena reserves 64 MiB of a worker's address space
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    # Frozen objects are outside the collector's reach: a worker's first collection then does not
    # touch (and copy) every page inherited from the zygote.
    gc.collect()
    gc.freeze()
    hello = {"ok": True, "ready": True, "pid": os.getpid(), "namespaces": namespaces, "uid": os.getuid(),
             "quota_off": quota, "steady_malloc": steady_malloc()}  # a fixed mmap threshold, inherited by workers
    if not quota:  # last: the root of the mount namespace, from which the runtime reaches the scenarios' files
        ns_fds.append(os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
    socket.send_fds(control, [json.dumps(hello).encode()], ns_fds)
    for fd in ns_fds:
        os.close(fd)
    try:
        Zygote(control, args.parent, args.unsafe).serve()
    finally:
        os._exit(0)


if __name__ == "__main__":
    main()
