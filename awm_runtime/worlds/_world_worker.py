"""A world worker process: imports scenarios once and serves their tool calls, one at a time.

Run by the pool as `python -I -m awm_runtime.worlds._world_worker --parent PID` with a scrubbed
environment. It speaks length-prefixed JSON frames on its original stdin/stdout; scenario code
that prints goes to stderr instead, so it can never corrupt the protocol. It dies with its
parent, and holds no episode state: an episode's state is its DB file, so a replacement worker
can serve any episode.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import os
import shutil
import traceback
from pathlib import Path
from typing import Any

from awm_runtime.isolation import die_with_parent, encode, protocol_fds, read_frame_fd, write_all
from awm_runtime.worlds._dbbuild import build_database
from awm_runtime.worlds._format import ScenarioSource, TableDef
from awm_runtime.worlds._host import ScenarioHost

# What generated FastAPI apps import: loaded before the first scenario so imports cost little.
PRELOAD = ("fastapi", "fastapi.responses", "pydantic", "sqlalchemy", "sqlalchemy.orm", "sqlalchemy.pool",
           "starlette.routing", "email_validator", "uvicorn", "jsonschema")


def describe(exc: BaseException) -> str:
    """`Type: message (scenario line N)`: where in the scenario's code it failed, when it did."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith("<scenario"):
            where = f" (full_code line {frame.lineno})"
    text = f"{type(exc).__name__}: {exc}"
    return (text[:600] + where).replace("\n", " ")


class Worker:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.hosts: dict[str, ScenarioHost] = {}

    def _load(self, msg: dict[str, Any], import_db: str) -> dict[str, Any]:
        host = ScenarioHost(msg["scenario"], msg["code"], import_db=import_db,
                            foreign_keys=bool(msg.get("foreign_keys")),
                            validate_arguments=bool(msg.get("validate_arguments", True)))
        self.loop.run_until_complete(host.start())
        self.hosts[msg["scenario"]] = host
        return {"ok": True, "tools": host.tools}

    def build(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Build the template, then import the app against it: import-time DDL lands in every episode."""
        scenario = ScenarioSource(tables=[TableDef(t[0], t[1], tuple(t[2]), tuple(t[3])) for t in msg["tables"]],
                                  inserts=[(t, s) for t, s in msg["inserts"]])
        try:
            report = build_database(scenario, Path(msg["template"]), foreign_keys=bool(msg.get("foreign_keys")))
        except Exception as exc:
            return {"ok": False, "stage": "build", "error": describe(exc)}
        try:
            reply = self._load(msg, msg["template"])
        except Exception as exc:
            return {"ok": False, "stage": "import", "error": describe(exc), "report": report.to_dict()}
        return {**reply, "report": report.to_dict()}

    def load(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Import a scenario built elsewhere, against a private scratch copy of its template.

        The copy sits next to the template, in the world's directory, so nothing outlives the world.
        """
        scratch = Path(msg["template"]).with_name(f"{msg['scenario']}.import-{os.getpid()}.db")
        shutil.copyfile(msg["template"], scratch)
        scratch.chmod(0o644)
        try:
            return self._load(msg, str(scratch))
        except Exception as exc:
            return {"ok": False, "stage": "import", "error": describe(exc)}
        finally:
            scratch.unlink(missing_ok=True)

    def call(self, msg: dict[str, Any]) -> dict[str, Any]:
        host = self.hosts.get(msg["scenario"])
        if host is None:
            return {"ok": False, "error": f"scenario {msg['scenario']!r} is not loaded in this worker"}
        reply = self.loop.run_until_complete(host.call(msg["db"], msg["tool"], msg.get("args") or {}))
        return {"ok": True, **reply}

    def handle(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        op = msg.get("op")
        if op == "exit":
            return None
        if op == "ping":
            return {"ok": True, "pid": os.getpid()}
        handler = {"build": self.build, "load": self.load, "call": self.call}.get(str(op))
        if handler is None:
            return {"ok": False, "error": f"unknown op {op!r}"}
        return handler(msg)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parent", type=int, required=True)
    args = parser.parse_args()
    die_with_parent(args.parent)
    in_fd, out_fd = protocol_fds()
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    worker = Worker(loop)
    write_all(out_fd, encode({"ok": True, "ready": True, "pid": os.getpid()}))
    try:
        while (msg := read_frame_fd(in_fd)) is not None:
            try:
                reply = worker.handle(msg)
            except BaseException as exc:  # SystemExit from scenario code included: report, then stop
                write_all(out_fd, encode({"ok": False, "fatal": True, "error": describe(exc)}))
                break
            if reply is None:
                break
            write_all(out_fd, encode(reply))
    finally:
        os._exit(0)  # skip interpreter teardown: scenario code may have left threads or atexit hooks


if __name__ == "__main__":
    main()
