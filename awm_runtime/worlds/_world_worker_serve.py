"""What a world worker does with each request from the runtime: build or import its one scenario, run tool calls
against an episode's DB, and answer each on its pipe (the process around it, and the zygote that forks it, are
`_world_worker`'s).

A call that comes when no other runs or waits runs in place on the reader's thread (`CallThreads.run_here`);
otherwise it goes to the call threads (`_call_threads`). Its reply, or the error that ended it, is one frame with
the request's id; a call that no thread could be started for is refused with the reason (`Worker._refuse`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from awm_runtime.isolation import Confinement, encode, narrow, write_all
from awm_runtime.worlds._call_threads import IDLE_EXIT_S, CallThreads
from awm_runtime.worlds._dbbuild import build_database
from awm_runtime.worlds._descriptors import blank_fds, descriptors_exhausted, open_fds
from awm_runtime.worlds._drive import run as drive
from awm_runtime.worlds._format import ScenarioSource, TableDef
from awm_runtime.worlds._host import SWEEP_S, ScenarioHost, drop_unlinked
from awm_runtime.worlds._requests import Requests

EPISODES = "episodes"  # a scenario directory's folder of episode DBs: all its worker may write once loaded
CALL_THREADS = 32  # tool calls a worker runs at once; the pool starts another worker past LOAD_PENALTY
CPU_EVERY_S = 0.05  # a call's reply carries the worker's CPU time at most this often (every other reply does)


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


__all__ = ["CALL_THREADS", "CPU_EVERY_S", "EPISODES", "Worker", "describe"]
