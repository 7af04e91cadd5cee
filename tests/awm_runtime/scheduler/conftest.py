"""Scheduler fixtures: an in-memory world and policies with controllable timing and failures.

These are real plug-ins implementing the protocols (no mocks): the scheduler cannot tell them
from the AWM world and the chat policy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from awm_runtime import (
    ArmConfig,
    CallTool,
    FinalAnswer,
    Message,
    ModelRef,
    PolicyTurn,
    RunConfig,
    Task,
    ToolCall,
    ToolSpec,
)
from awm_runtime._build import BuildContext, build_shaper
from awm_runtime._types import ToolResult, Usage, Verdict
from awm_runtime.episode import EpisodeLimits, Harness
from awm_runtime.models import load_registry
from awm_runtime.scheduler import PreparedRun


class MemorySession:
    tools = (ToolSpec(name="noop"),)

    def __init__(self, world: MemoryWorld, task: Task) -> None:
        self.world, self.task = world, task

    async def call_tool(self, call: ToolCall) -> ToolResult:
        return ToolResult(text="ok")

    async def verify(self, final_answer: str, messages: Sequence[Message]) -> Verdict:
        return Verdict(result="complete", mode="none")

    async def close(self) -> None:
        await asyncio.sleep(0.001)  # an await in cleanup, as real sessions have
        self.world.closed += 1
        if self.task.task_idx in self.world.fail_close:
            raise OSError("disk went away")


class MemoryWorld:
    """`n` tasks in one scenario; counts sessions; can fail to open or close chosen tasks."""

    def __init__(self, n: int = 8, *, fail_open: set[int] = frozenset(), fail_close: set[int] = frozenset()) -> None:
        self._tasks = [Task(scenario="mem", task_idx=i, text=f"task {i}") for i in range(n)]
        self.fail_open, self.fail_close = set(fail_open), set(fail_close)
        self.opened = self.closed = 0
        self.closed_world = False

    @property
    def name(self) -> str:
        return "memory"

    def tasks(self) -> Sequence[Task]:
        return self._tasks

    async def open(self, task: Task, *, episode_id: str) -> MemorySession:
        if task.task_idx in self.fail_open:
            raise RuntimeError("scenario failed to load")
        self.opened += 1
        return MemorySession(self, task)

    async def aclose(self) -> None:
        self.closed_world = True


class StepPolicy:
    """Calls `noop` `steps` times, then answers; each reply takes `delay_s`. Raises at chosen act calls."""

    def __init__(self, *, steps: int = 1, delay_s: float = 0.0, raise_on: set[int] = frozenset()) -> None:
        self.steps, self.delay_s, self.raise_on = steps, delay_s, set(raise_on)
        self.acts = 0

    @property
    def ref(self) -> ModelRef:
        return ModelRef(alias="step", model="test/step")

    def begin(self, task: Task, tools: Sequence[ToolSpec]) -> list[Message]:
        return [Message(role="user", content=task.text, source="system")]

    async def act(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, seed: int = 0) -> PolicyTurn:
        self.acts += 1
        if self.acts in self.raise_on:
            raise RuntimeError("policy exploded")
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        done = sum(1 for m in messages if m.role == "assistant")
        action: Any = FinalAnswer("done") if done >= self.steps else CallTool(ToolCall(id=f"c{done}", name="noop"))
        msg = Message(role="assistant", content="x", source="policy")
        return PolicyTurn(message=msg, action=action, usage=Usage(calls=1, prompt_tokens=10, completion_tokens=2))

    def observe(self, turn: PolicyTurn, text: str, source: Any) -> list[Message]:
        return [Message(role="user", content=text, source=source)]


def prepared(out: Path, world: Any, policy: Any, *, arms: tuple[str, ...] = ("main",), **config: Any) -> PreparedRun:
    """A PreparedRun as `prepare` builds one, around our own world and policy."""
    named = tuple(ArmConfig(name=a) for a in arms) if arms != ("main",) else ()
    cfg = RunConfig(out=out, shards=1, arms=named, **config)
    harnesses = {arm: Harness(policy=policy, shaper=build_shaper("awm"),
                              limits=EpisodeLimits(max_turns=cfg.max_turns, timeout_s=cfg.episode_timeout_s))
                 for arm in arms}
    return PreparedRun(cfg, world, list(world.tasks()), harnesses, BuildContext(registry=load_registry()))
