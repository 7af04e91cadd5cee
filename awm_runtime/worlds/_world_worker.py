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

Tool calls run side by side, each on one of up to `CALL_THREADS` threads with its own event loop:
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
import traceback
from pathlib import Path
from typing import Any

from awm_runtime._malloc import steady_malloc
from awm_runtime.isolation import (
    Confinement,
    Limits,
    checkpoint_coverage,
    confine,
    die_with_parent,
    encode,
    enter_mount_namespace,
    enter_namespaces,
    join_namespaces,
    mount_quota,
    namespace_fds,
    narrow,
    resize_quota,
    write_all,
    yield_cpu,
)
from awm_runtime.isolation import prepare as prepare_confinement
from awm_runtime.worlds._call_threads import IDLE_EXIT_S, CallThreads
from awm_runtime.worlds._dbbuild import build_database
from awm_runtime.worlds._descriptors import blank_fds, descriptors_exhausted, open_fds
from awm_runtime.worlds._drive import run as drive
from awm_runtime.worlds._format import ScenarioSource, TableDef
from awm_runtime.worlds._host import SWEEP_S, ScenarioHost, drop_unlinked, keep_within
from awm_runtime.worlds._requests import Requests

# What generated FastAPI apps import: loaded once in the zygote, so a worker imports little.
PRELOAD = ("fastapi", "fastapi.responses", "fastapi.encoders", "fastapi.openapi.utils", "pydantic", "sqlalchemy",
           "sqlalchemy.orm", "sqlalchemy.pool", "sqlalchemy.dialects.sqlite", "starlette.routing", "email_validator",
           "uvicorn", "jsonschema", "anyio", "anyio._backends._asyncio", "datetime", "decimal", "enum", "uuid",
           "json", "re", "typing", "hashlib", "secrets", "random", "math")
EPISODES = "episodes"  # a scenario directory's folder of episode DBs: all its worker may write once loaded
_M_ARENA_MAX = -8
CALL_THREADS = 32  # tool calls a worker runs at once; the pool starts another worker past LOAD_PENALTY
CPU_EVERY_S = 0.05  # a call's reply carries the worker's CPU time at most this often (every other reply does)
THREAD_STACK = 4 << 20  # 32 threads x 8 MiB (the default) would take a quarter of the address space limit


def describe(exc: BaseException) -> str:
    """`Type: message (scenario line N)`: where in the scenario's code it failed, when it did."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith("<scenario"):
            where = f" (full_code line {frame.lineno})"
    text = f"{type(exc).__name__}: {exc}"
    return (text[:600] + where).replace("\n", " ")


class Worker:
    """One scenario's app, built or imported once, serving its episodes' tool calls one at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop, directory: Path, final: Confinement, unsafe: bool,
                 idle_exit_s: float = IDLE_EXIT_S) -> None:
        self.loop = loop
        self.directory = directory
        self.episodes = str(directory / EPISODES)
        self.final = final
        self.unsafe = unsafe
        self.host: ScenarioHost | None = None
        self.out_fd = -1
        self.write_lock = threading.Lock()
        self.calls = CallThreads(self._answer, CALL_THREADS, refuse=self._refuse, idle_exit_s=idle_exit_s,
                                 on_stuck=self._read_beside)
        # Calls run in place on this thread get a loop of their own: the app's lifespan task stays on `loop`, which
        # runs only while the app starts, as before. Made now, before scenario code, like `loop`.
        self.here_loop = asyncio.new_event_loop()
        self.requests: Requests | None = None
        self.cpu_due = 0.0  # when a call's reply next carries the worker's CPU time (monotonic)

    def _load(self, msg: dict[str, Any], import_db: str) -> dict[str, Any]:
        if self.host is not None:
            return {"ok": False, "error": "this world worker already serves a scenario"}
        before = open_fds()
        host = ScenarioHost(msg["scenario"], msg["code"], import_db=import_db,
                            foreign_keys=bool(msg.get("foreign_keys")),
                            validate_arguments=bool(msg.get("validate_arguments", True)))
        self.loop.run_until_complete(host.start())
        host.release_import_db()
        # Loaded: from now on scenario code may write existing episode DBs and nothing else. Narrowed before the
        # sweep, so a thread the import left running cannot open a new write handle after it.
        narrow(self.final, unsafe=self.unsafe)
        swept = blank_fds(open_fds() - before)
        self.host = host
        threading.Thread(target=_sweep_connections, daemon=True, name="connection-sweep").start()
        return {"ok": True, "tools": host.tools, "fds_swept": swept}

    def _template(self, msg: dict[str, Any]) -> Path:
        template = Path(msg["template"])
        if template.parent != self.directory:
            raise ValueError(f"template {template} is outside this worker's directory")
        return template

    def build(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Build the template, then import the app against it: import-time DDL lands in every episode."""
        scenario = ScenarioSource(tables=[TableDef(t[0], t[1], tuple(t[2]), tuple(t[3])) for t in msg["tables"]],
                                  inserts=[(t, s) for t, s in msg["inserts"]])
        try:
            report = build_database(scenario, self._template(msg), foreign_keys=bool(msg.get("foreign_keys")))
        except Exception as exc:
            return {"ok": False, "stage": "build", "error": describe(exc)}
        try:
            reply = self._load(msg, msg["template"])
        except Exception as exc:
            return {"ok": False, "stage": "import", "error": describe(exc), "report": report.to_dict()}
        return {**reply, "report": report.to_dict()}

    def load(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Import a scenario built by another worker, against a scratch copy of its template that the runtime
        made in this worker's directory (and removes: the pristine template itself is out of the worker's reach)."""
        try:
            return self._load(msg, str(self._template(msg)))
        except Exception as exc:
            return {"ok": False, "stage": "import", "error": describe(exc)}

    def call(self, msg: dict[str, Any], loop: asyncio.AbstractEventLoop) -> dict[str, Any]:
        if self.host is None or self.host.scenario_id != msg["scenario"]:
            return {"ok": False, "error": f"scenario {msg['scenario']!r} is not loaded in this worker"}
        db = msg["db"]
        if os.path.dirname(db) != self.episodes:  # not normalised first: a path with `..` or `.` is refused
            return {"ok": False, "error": f"episode DB {db} is outside this worker's directory"}
        reply = drive(loop, self.host.call(db, msg["tool"], msg.get("args") or {}))
        if reply.get("status") == 500 and (short := descriptors_exhausted()):
            # A 500 from a worker whose descriptors are used up is the scenario's doing (its code keeps files
            # open; our own connections and threads stay far below the limit), not the agent's: a world fault.
            return {"ok": False, "error": f"the scenario's code has used up its world worker's file descriptors "
                                          f"({short}), so its handler could not open the episode's DB"}
        reply["ok"] = True
        return reply

    def _answer(self, msg: dict[str, Any], loop: asyncio.AbstractEventLoop) -> None:
        """Run one tool call on a call thread and send its reply, whatever happens."""
        try:
            reply = self.call(msg, loop)
        except BaseException as exc:  # SystemExit from scenario code included: this call's error
            reply = {"ok": False, "fatal": True, "error": describe(exc)}
        reply["id"] = msg.get("id")
        try:
            self.send(reply, cpu=self._cpu_due())
        except Exception as exc:  # a reply that cannot be encoded is this call's failure
            self.send({"ok": False, "error": f"the tool's reply cannot be sent ({describe(exc)})",
                       "id": msg.get("id")})

    def _refuse(self, msg: dict[str, Any], exc: Exception) -> None:
        """Answer a call that no call thread could run: the thread could not make its event loop."""
        if short := descriptors_exhausted():
            # Scenario code keeps files open (our own threads and connections stay far below the limit): a world fault.
            error = (f"the scenario's code has used up its world worker's file descriptors ({short}), so no thread "
                     f"could be started to run the call")
        else:
            error = f"no thread could be started to run the call ({describe(exc)})"
        self.send({"ok": False, "error": error, "id": msg.get("id")})

    def _read_beside(self) -> None:
        if self.requests is not None:
            self.requests.read_beside()

    def _answer_beside(self, msg: dict[str, Any]) -> None:
        """A request other than a call, read while a call runs in place (none is expected then)."""
        try:
            reply = self.handle(msg)
        except BaseException as exc:
            reply = {"ok": False, "fatal": True, "error": describe(exc)}
        self.send({**(reply or {}), "id": msg.get("id")})

    def _cpu_due(self) -> bool:
        """Whether a call's reply carries the worker's CPU time: at most once every `CPU_EVERY_S` (reading it is a
        system call that sums every thread's clock; the runtime needs it only against a limit of seconds)."""
        now = time.monotonic()
        if now < self.cpu_due:
            return False
        self.cpu_due = now + CPU_EVERY_S
        return True

    def send(self, reply: dict[str, Any], *, cpu: bool = True) -> None:
        """Write `reply` (a dict of its own, given up to this) as one frame, with the worker's CPU time if `cpu`."""
        if cpu:
            reply["cpu_s"] = round(time.process_time(), 3)
        frame = encode(reply)
        with self.write_lock:
            write_all(self.out_fd, frame)

    def handle(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        op = msg.get("op")
        if op == "exit":
            return None
        if op == "ping":
            return {"ok": True, "pid": os.getpid()}
        handler = {"build": self.build, "load": self.load}.get(str(op))
        if handler is None:
            return {"ok": False, "error": f"unknown op {op!r}"}
        return handler(msg)

    def serve(self, in_fd: int, out_fd: int) -> None:
        self.out_fd = out_fd
        self.requests = requests = Requests(in_fd, submit=self.calls.submit, answer=self._answer_beside,
                                            running_here=lambda: self.calls.running_here, failed=describe)
        while (msg := requests.next()) is not None:
            rid = msg.get("id")
            if msg.get("op") == "call":
                # In place when no other call runs or waits: most calls come one at a time, and a hand-off to a
                # call thread costs a wake-up each way. A call that turns out slow gets a reader beside it.
                if self.host is None or not self.calls.run_here(msg, self.here_loop):
                    self.calls.submit(msg)
                continue
            try:
                reply = self.handle(msg)
            except BaseException as exc:  # SystemExit from scenario code included: report, then stop
                self.send({"ok": False, "fatal": True, "error": describe(exc), "id": rid})
                return
            if reply is None:
                return
            self.send({**reply, "id": rid})


def _sweep_connections() -> None:
    """Every `SWEEP_S`, close the kept connections of episodes that have ended (their DB file is gone)."""
    while True:
        time.sleep(SWEEP_S)
        with contextlib.suppress(Exception):
            drop_unlinked()


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
