"""AwmSession: one episode's world (a private DB copy, its tools, its verifier), and the Prepared it opens from."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from awm_runtime._errors import WorldError
from awm_runtime._types import Message, Task, ToolCall, ToolResult, ToolSpec, Verdict
from awm_runtime.worlds._templates import INLINE_COPY_BYTES, check_template
from awm_runtime.worlds._verify import Verifier
from awm_runtime.worlds._world_worker_pool import WorldWorkerPool


class SessionWorld(Protocol):
    """What a session needs of the world that opened it (an `AwmWorld`)."""

    pool: WorldWorkerPool
    verifier: Verifier

    def disk_full_text(self, scenario_id: str, what: str = ...) -> str:
        """Why the scenario's files no longer fit."""
        ...

    def unhold(self, scenario_id: str) -> None:
        """The session's episode closed: end its hold on the scenario."""
        ...


@dataclass(slots=True)
class Prepared:
    """A scenario ready for episodes: its pristine template DB, its tools, and the template's size and digest."""

    template: Path  # the pristine copy: outside every worker's reach, read-only, hash-checked before use
    tools: list[ToolSpec]
    size: int
    digest: bytes


@dataclass(slots=True)
class AwmSession:
    """One episode's world: a private DB copy, the scenario's tools, and its verifier.

    The agent reaches only `tools` through `call_tool`; `verify` is the runtime's, called after
    the episode ends, and nothing the agent can call returns a reward.
    """

    _world: SessionWorld
    _task: Task
    _prepared: Prepared
    db: Path  # where this process reaches the episode's DB (through its scenario's tmpfs when it has one)
    worker_db: str  # the same file as the scenario's world workers see it
    _closed: bool = field(default=False)

    @property
    def tools(self) -> Sequence[ToolSpec]:
        return self._prepared.tools

    @property
    def initial_db(self) -> Path:
        return self._prepared.template

    async def call_tool(self, call: ToolCall) -> ToolResult:
        if self._closed:
            raise WorldError("tool call on a closed world session")
        started = time.perf_counter()
        pool = self._world.pool
        reply: dict[str, Any] = await pool.call(self._task.scenario, self.worker_db, call.name, call.arguments)
        if reply["is_error"] and reply.get("status") == 500 and pool.disk_full(self._task.scenario):
            raise WorldError(f"tool {call.name!r} failed with its scenario's disk full: "
                             f"{self._world.disk_full_text(self._task.scenario)}")
        return ToolResult(text=reply["text"], is_error=bool(reply["is_error"]), status=reply.get("status"),
                          elapsed_ms=(time.perf_counter() - started) * 1000)

    async def verify(self, final_answer: str, messages: Sequence[Message]) -> Verdict:
        p = self._prepared
        # The verifier's initial state is the pristine template: checked unchanged first.
        if p.size <= INLINE_COPY_BYTES:
            check_template(p.template, p.size, p.digest)
        else:
            await asyncio.to_thread(check_template, p.template, p.size, p.digest)
        return await self._world.verifier.verify(self._task.scenario, self._task.task_idx, self._task.text,
                                                 self.initial_db, self.db, final_answer, messages)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._world.pool.release(self.worker_db)
        for path in (self.db, self.db.with_name(self.db.name + "-journal")):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self._world.unhold(self._task.scenario)
