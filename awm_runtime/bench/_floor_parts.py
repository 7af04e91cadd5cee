"""The floors of `awm-bench floors`: each cost's least possible work, done in this process, beside the cost itself.

- A tool call's floor is the scenario's own FastAPI app handling the same HTTP request in this process (a bare
  ASGI call: no worker, no pipe, no sandbox, no argument check, no reply rendering), with its SQLAlchemy engine
  routed to a copy of the same template, one kept connection, as in a world worker. Its cost is
  `AwmSession.call_tool`: this process's CPU plus the world worker's.
- A verification's floor is the verifier function, compiled once, called in this process on the same two DBs.
  Its cost is `AwmSession.verify`: this process's CPU plus the verifier server's and its forks'.
- A model call's floor is a bare aiohttp POST of the same body (encoded once) and an orjson parse of the reply,
  against the same loopback server. Its cost is `ModelClient.complete` (limiter, retry wrapper, transport, parse,
  pricing, the model_called event rendered into an events.jsonl).
- A reset's floor is a copy of the template file; its cost is `AwmWorld.open` with `AwmSession.close`.

CPU is process CPU time (user + system), never wall: the loopback model server's is not counted on either side.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from awm_runtime.bench._procs import cpu_seconds


def burn(seconds: float) -> None:
    """Spend `seconds` of this thread's CPU (the benchmark's known injected overhead)."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def world_cpu_s(world: Any) -> float:
    """CPU seconds so far of the world's processes: its workers, and the verifier server with its forks and kept
    workers (reaped or alive: one alive at the start and reaped by the end is counted once, as a whole)."""
    sandbox, *alive = world.sandbox.served_by() or [None]
    return (sum(cpu_seconds(pid) for pid in world.pool.pids()) + cpu_seconds(sandbox, reaped=True)
            + sum(cpu_seconds(pid, reaped=True) for pid in alive))


BLOCK = 50  # calls a side runs in its turn (`interleaved_us`)


async def per_call_us(n: int, one: Callable[[int], Awaitable[Any]], world: Any = None,
                      settle_s: float = 0.0) -> tuple[float, float]:
    """CPU microseconds per call of `one(i)` for i < n: (this process's, the world's processes') (0 without
    `world`)."""
    here, there = await _cpu_s(range(n), one, world, settle_s)
    return here / max(1, n) * 1e6, there / max(1, n) * 1e6


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a comparison: `one(i)` is a call; `world`'s processes' CPU is counted too; a turn ends with
    `settle_s` of sleep (a server reaps its last child within it)."""

    one: Callable[[int], Awaitable[Any]]
    world: Any = None
    settle_s: float = 0.0


async def interleaved_us(n: int, *sides: Side, block: int = BLOCK) -> list[tuple[float, float]]:
    """CPU microseconds per call of each side, as `per_call_us` gives them, each side running `n` calls in turns of
    `block`: side 0's first block, side 1's, ..., then each side's second block. A shared VM's speed drifts within
    seconds (one floor moved 694-1,141 us between repeats of one invocation); sides measured one after another
    take different shares of that drift, sides in turns take the same.

    At most one side has a `world`: its processes do nothing for the other sides, so their CPU is read once, before
    the first turn and after the last (the kernel gives another process's CPU in 10 ms ticks: read at every turn,
    the tick's error would add up over the turns, ~80 us a call at 300 verifications)."""
    worlds = [side.world for side in sides if side.world is not None]
    if len(worlds) > 1:
        raise ValueError("at most one side of a comparison may count a world's processes")
    there = world_cpu_s(worlds[0]) if worlds else 0.0
    here = [0.0 for _ in sides]
    for start in range(0, n, block):
        calls = range(start, min(n, start + block))
        for k, side in enumerate(sides):
            here[k] += (await _cpu_s(calls, side.one, None, side.settle_s))[0]
    there = world_cpu_s(worlds[0]) - there if worlds else 0.0
    return [(mine / max(1, n) * 1e6, (there if side.world is not None else 0.0) / max(1, n) * 1e6)
            for mine, side in zip(here, sides, strict=True)]


async def _cpu_s(calls: range, one: Callable[[int], Awaitable[Any]], world: Any,
                 settle_s: float) -> tuple[float, float]:
    """CPU seconds of this process and of `world`'s processes while `one(i)` runs for each i in `calls` (the reads of
    the world's processes' clocks fall outside this process's window)."""
    there = world_cpu_s(world) if world is not None else 0.0
    here = time.process_time()
    for i in calls:
        await one(i)
    if settle_s:
        await asyncio.sleep(settle_s)  # a server reaps its last child
    here = time.process_time() - here
    return here, (world_cpu_s(world) - there) if world is not None else 0.0


class AppFloor:
    """The scenario's app imported in this process, answering HTTP requests through a bare ASGI call."""

    def __init__(self, scenario_id: str, code: str, template: Path, folder: Path) -> None:
        from awm_runtime.worlds._host import CURRENT_DB, import_scenario_app
        from awm_runtime.worlds._openapi import install as install_openapi_walk
        from awm_runtime.worlds._tools import tools_from_openapi

        self.db = str(folder / "floor.db")
        shutil.copyfile(template, self.db)
        token = CURRENT_DB.set(self.db)
        try:
            self.app = import_scenario_app(f"awm_floor_{scenario_id}", code)
            install_openapi_walk()
            _, self.ops = tools_from_openapi(self.app.openapi())
        finally:
            CURRENT_DB.reset(token)

    def requests(self, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, str, dict[str, Any],
                                                                             dict[str, str], Any]]:
        """Each (tool, arguments) as the HTTP request the worker makes of it (split once, outside the timing)."""
        from awm_runtime.worlds._tools import split_arguments

        return [(self.ops[name].method.upper(), *split_arguments(self.ops[name], args)) for name, args in calls]

    async def request(self, method: str, path: str, query: dict[str, Any], headers: dict[str, str],
                      body: Any) -> tuple[int, bytes]:
        from awm_runtime.worlds._host import CURRENT_DB, asgi_request

        token = CURRENT_DB.set(self.db)
        try:
            return await asgi_request(self.app, method, path, query, headers, body)
        finally:
            CURRENT_DB.reset(token)


class VerifierFloor:
    """The task's verifier function, compiled once, called in this process."""

    def __init__(self, code: str) -> None:
        from awm_runtime.verifiers import find_function_name

        namespace: dict[str, Any] = {"__name__": "awm_floor_verifier"}
        exec(compile(code, "<verifier>", "exec"), namespace)
        self.function = namespace[find_function_name(code, "verify_task_completion")]

    def __call__(self, initial_db: Path, final_db: Path) -> Any:
        return self.function(initial_db_path=str(initial_db), final_db_path=str(final_db), final_answer="")


class BareModel:
    """A bare aiohttp POST of a prepared body to the loopback server, and an orjson parse of its reply."""

    def __init__(self, url: str, body: bytes) -> None:
        import aiohttp

        self.url, self.body = f"{url.rstrip('/')}/chat/completions", body
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        self.headers = {"Content-Type": "application/json"}

    async def call(self, _: int = 0) -> Any:
        async with self.session.post(self.url, data=self.body, headers=self.headers) as resp:
            return orjson.loads(await resp.read())

    async def aclose(self) -> None:
        await self.session.close()


def model_request(tools: list[dict[str, Any]], turns: int = 3) -> list[dict[str, Any]]:
    """Messages of an episode `turns` tool calls in: a system prompt, the task, each call and its result."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an agent. Use the tools to complete the user's task. " * 8},
        {"role": "user", "content": "Create a project named 'bench item 0', then list the open projects."}]
    for i in range(turns):
        name = tools[i % len(tools)]["function"]["name"]
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": '{"status": "open"}'}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}",
                         "content": '{"items": [' + ", ".join(f'{{"id": {j}, "name": "project {j}", '
                                                             f'"status": "open", "amount": {j * 12.5}}}'
                                                             for j in range(1, 7)) + '], "total": 6}'})
    return messages


def ratio(cost: float, floor: float) -> float | None:
    """cost / floor, None when the floor measured nothing (never a division by zero shown as a figure)."""
    return round(cost / floor, 3) if floor > 0 else None


__all__ = ["BLOCK", "AppFloor", "BareModel", "Side", "VerifierFloor", "burn", "interleaved_us", "model_request",
           "per_call_us", "ratio", "world_cpu_s"]
