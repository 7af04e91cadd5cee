"""`--worlds mcp+http://HOST:PORT/PATH` and `mcp+stdio:'COMMAND'`: episodes against any MCP server.

Each episode is its own MCP session (streamable HTTP), or its own server process (stdio), started with a
fresh `{episode_dir}` when the command names one (_stdio.py). Tasks come from `--tasks-file`. The scenario is
named after the server's own name (`serverInfo.name`), or `--scenario-name`. An MCP server has no verifier:
with `--judge` the judge model classifies the episode from its trajectory, final answer and the task's own
criteria; without, the verdict is `no_verifier`.

The MCP SDK's client runs on anyio task groups, which must be entered and left by the same task, so each
session lives in a task of its own and the episode talks to it through a queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from awm_runtime._errors import ConfigError, WorldError
from awm_runtime._log import get_logger
from awm_runtime._types import Message, Task, ToolCall, ToolResult, ToolSpec, Verdict
from awm_runtime.verifiers import Criteria, Judge
from awm_runtime.worlds._names import normalize_scenario
from awm_runtime.worlds.remote._base import RemoteOptions, RemoteWorld, TransientWorldError, bounded, retried
from awm_runtime.worlds.remote._spares import Spares
from awm_runtime.worlds.remote._stdio import StdioLaunch, parse_world_env
from awm_runtime.worlds.remote._tasks import read_tasks_file

log = get_logger("awm_runtime.worlds")
T = TypeVar("T")
PROBE = "probe"


def _mcp() -> Any:
    """The MCP SDK client, checked to be the 1.x API this module speaks."""
    from importlib.metadata import version

    installed = version("mcp")
    if not installed.startswith("1."):
        raise ConfigError(f"MCP worlds need the mcp 1.x client (awm-runtime pins mcp 1.30.0); found mcp {installed}")
    import mcp

    return mcp


class McpWorld(RemoteWorld):
    """An MCP server as a World: `mcp+http://...` (streamable HTTP) or `mcp+stdio:COMMAND`."""

    judged_here = True

    def __init__(self, spec: str, tasks_file: Path | None, options: RemoteOptions | None = None, *,
                 judge: Judge | None = None) -> None:
        super().__init__(spec, options, judge=judge)
        if tasks_file is None:
            raise ConfigError(f"--worlds {spec}: an MCP world needs --tasks-file FILE (JSONL {{\"task\": ..., "
                              f"\"id\": ...}})")
        self.tasks_file = tasks_file
        self.criteria: dict[tuple[str, int], Criteria] = {}
        rest = spec.split("+", 1)[1]
        env = parse_world_env(self.options.world_env)
        if rest.startswith("stdio:"):
            argv = shlex.split(rest[len("stdio:"):])
            if not argv:
                raise ConfigError(f"--worlds {spec}: expected mcp+stdio:'COMMAND ARGS'")
            self.url: str | None = None
            self.launch: StdioLaunch | None = StdioLaunch(argv, env, self.options.log_dir)
            provisional = Path(argv[0]).name
        else:
            parts = urlsplit(rest)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ConfigError(f"--worlds {spec}: expected mcp+http://HOST:PORT/PATH or mcp+stdio:'COMMAND'")
            if env:
                raise ConfigError(f"--world-env is for mcp+stdio worlds (it sets the server's environment); "
                                  f"{spec} runs elsewhere")
            self.url, self.launch = rest, None
            provisional = parts.netloc
        # Until the server says its name: the log of the first server started goes under this one.
        self.scenario = normalize_scenario(self.options.scenario_name or provisional) or "mcp"
        self.title = self.options.scenario_name or ""
        self.server_name = ""
        self.log_name = self.scenario  # the stderr log its servers write: worlds/<log_name>.log
        # stdio servers take seconds to start: a few wait ready for the next episodes (_spares.py)
        self._spares: Spares[McpSession] = Spares(self.options.spares if self.launch is not None else 0,
                                                  lambda name: McpSession.start(self, name))

    @property
    def argv(self) -> list[str]:
        return self.launch.argv if self.launch is not None else []

    async def connect(self) -> None:
        _mcp()
        provisional = self.scenario
        self.log_name = f"{provisional}.probe-{os.getpid()}"  # shard processes probe too: one file each
        try:
            probe = await retried("connect", 2, self.options, lambda: McpSession.start(self, PROBE))
        except WorldError as exc:
            self._log_as(provisional)
            raise ConfigError(self._start_failure(exc)) from None
        await probe.close()
        if not self.options.scenario_name and normalize_scenario(self.server_name):
            self.scenario = normalize_scenario(self.server_name)
        self.title = self.options.scenario_name or self.server_name or self.scenario
        self._log_as(self.scenario)
        self._tasks = read_tasks_file(self.tasks_file, self.scenario, title=self.title, kind="mcp",
                                      criteria=self.criteria)
        log.info("remote_world_connected", world=self.name, scenario=self.scenario, server=self.server_name,
                 tasks=len(self._tasks), tools=len(probe.tools))

    def _log_as(self, name: str) -> None:
        if self.launch is not None:
            self.launch.adopt(self.log_name, name)
        self.log_name = name

    def _start_failure(self, exc: WorldError) -> str:
        line = f"--worlds {self.name}: cannot open an MCP session: {exc}"
        if self.launch is None:
            return line
        path = self.launch.log_path(self.scenario)
        tail = self.launch.tail(self.scenario)
        said = f"the server's last lines on stderr ({path}):\n{tail}" if tail else f"its stderr is empty ({path})"
        return f"{line}\n{said}"

    async def open(self, task: Task, *, episode_id: str) -> McpSession:
        session = await self._spares.take()
        if session is None:
            session = await retried("open", self.options.attempts, self.options,
                                    lambda: McpSession.start(self, episode_id))
        session.episode_id = episode_id
        session.task = task
        return session

    @contextlib.asynccontextmanager
    async def client(self, episode_dir: Path | None = None) -> AsyncIterator[Any]:
        """A connected, initialised MCP ClientSession (must be used within one task)."""
        mcp = _mcp()
        timeout = timedelta(seconds=self.options.tool_timeout_s + 15.0)
        if self.launch is None:
            from mcp.client.streamable_http import streamable_http_client

            assert self.url is not None
            async with streamable_http_client(self.url) as (read, write, _), \
                    mcp.ClientSession(read, write, read_timeout_seconds=timeout) as session:
                self._learn(await session.initialize())
                yield session
        else:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            command, args, env = self.launch.params(episode_dir)
            params = StdioServerParameters(command=command, args=args, env=env)
            async with stdio_client(params, errlog=self.launch.errlog(self.log_name)) as (read, write), \
                    mcp.ClientSession(read, write, read_timeout_seconds=timeout) as session:
                self._learn(await session.initialize())
                yield session

    def _learn(self, init: Any) -> None:
        info = getattr(init, "serverInfo", None)
        if not self.server_name and info is not None:
            self.server_name = str(getattr(info, "name", "") or "")

    async def aclose(self) -> None:
        await self._spares.aclose()
        if self.launch is not None:
            self.launch.close()


class McpSession:
    """One episode: an MCP session held by its own task. The agent reaches only the server's tools."""

    def __init__(self, world: McpWorld, episode_id: str) -> None:
        self.world = world
        self.episode_id = episode_id
        self.task: Task | None = None
        self._tools: list[ToolSpec] = []
        self._jobs: asyncio.Queue[tuple[Callable[[Any], Awaitable[Any]], asyncio.Future[Any]] | None] = \
            asyncio.Queue()
        self._runner: asyncio.Task[None] | None = None
        self._failed: WorldError | None = None
        self.episode_dir: Path | None = None

    @property
    def tools(self) -> Sequence[ToolSpec]:
        return self._tools

    @property
    def alive(self) -> bool:
        """Whether the session still holds a working connection to its server."""
        return self._failed is None and self._runner is not None and not self._runner.done()

    @classmethod
    async def start(cls, world: McpWorld, episode_id: str) -> McpSession:
        self = cls(world, episode_id)
        if world.launch is not None:
            self.episode_dir = await asyncio.to_thread(world.launch.episode_dir, episode_id)
        ready: asyncio.Future[list[ToolSpec]] = asyncio.get_running_loop().create_future()
        self._runner = asyncio.create_task(self._run(ready), name=f"mcp-session-{episode_id}")
        try:
            self._tools = await bounded(asyncio.shield(ready), world.options.connect_timeout_s + 20,
                                        f"{world.name}: opening an MCP session")
        except BaseException:
            await self.close()
            raise
        return self

    async def _run(self, ready: asyncio.Future[list[ToolSpec]]) -> None:
        try:
            async with self.world.client(self.episode_dir) as session:
                listing = await session.list_tools()
                tools = [ToolSpec(name=t.name, description=t.description or "",
                                  input_schema=dict(t.inputSchema or {"type": "object", "properties": {}}))
                         for t in listing.tools]
                ready.set_result(await self._reset(session, tools))
                while (job := await self._jobs.get()) is not None:
                    fn, done = job
                    try:
                        done.set_result(await fn(session))
                    except Exception as exc:
                        if not done.done():
                            done.set_exception(exc)
        except Exception as exc:  # the transport failed: whoever waits learns why
            error = TransientWorldError(f"{self.world.name}: MCP session failed: {_describe(exc)}")
            if not ready.done():
                ready.set_exception(error)
            while not self._jobs.empty():
                job = self._jobs.get_nowait()
                if job is not None and not job[1].done():
                    job[1].set_exception(error)
            self._failed = error

    async def _reset(self, session: Any, tools: list[ToolSpec]) -> list[ToolSpec]:
        """--world-reset-tool: call the server's reset tool before the episode, and keep it from the agent."""
        name = self.world.options.reset_tool
        if not name or self.episode_id == PROBE:
            return [t for t in tools if t.name != name] if name else tools
        if not any(t.name == name for t in tools):
            raise WorldError(f"the server has no tool {name!r} (--world-reset-tool)")
        result = await session.call_tool(name, {})
        if result.isError:
            text = " ".join(getattr(c, "text", "") or "" for c in result.content)[:300]
            raise WorldError(f"reset tool {name!r} failed: {text}")
        return [t for t in tools if t.name != name]

    async def _do(self, fn: Callable[[Any], Awaitable[T]], what: str) -> T:
        if self._failed is not None or self._runner is None or self._runner.done():
            raise WorldError(str(self._failed or f"{self.world.name}: MCP session is closed"))
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        await self._jobs.put((fn, done))
        runner = self._runner
        waits: list[asyncio.Future[Any]] = [done, runner]
        finished, _ = await asyncio.wait(waits, timeout=self.world.options.message_timeout_s,
                                         return_when=asyncio.FIRST_COMPLETED)
        if done in finished:
            return done.result()
        raise WorldError(str(self._failed) if runner in finished and self._failed
                         else f"{self.world.name}: {what}: no reply within {self.world.options.message_timeout_s:g}s")

    async def call_tool(self, call: ToolCall) -> ToolResult:
        timeout = timedelta(seconds=self.world.options.tool_timeout_s)

        async def go(session: Any) -> Any:
            return await session.call_tool(call.name, call.arguments, read_timeout_seconds=timeout)

        try:
            result = await self._do(go, f"tool {call.name}")
        except WorldError:
            raise
        except Exception as exc:  # a protocol error (timeout, bad request) is the world's, not the agent's
            raise WorldError(f"{self.world.name}: tool {call.name}: {_describe(exc)}") from exc
        text = "\n".join(getattr(c, "text", None) or f"[{getattr(c, 'type', 'content')} content]"
                         for c in result.content)
        return ToolResult(text=text, is_error=bool(result.isError))

    async def verify(self, final_answer: str, messages: Sequence[Message]) -> Verdict:
        judge = self.world.judge
        if judge is None:
            return Verdict(result="no_verifier", mode="none")
        from awm_runtime.verifiers import classify_trajectory

        task = self.task.text if self.task is not None else ""
        criteria = self.world.criteria.get(self.task.key, Criteria()) if self.task is not None else Criteria()
        return await classify_trajectory(judge, task=task, messages=messages, criteria=criteria,
                                         final_answer=final_answer)

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        try:
            await self._stop(runner)
        finally:
            if self.episode_dir is not None and self.world.launch is not None:
                await asyncio.to_thread(self.world.launch.drop, self.episode_dir)

    async def _stop(self, runner: asyncio.Task[None]) -> None:
        await self._jobs.put(None)
        try:
            await asyncio.wait_for(asyncio.shield(runner), 10)
        except TimeoutError:  # a server that will not let go: drop the session
            log.warning("mcp_session_close_timeout", world=self.world.name, episode_id=self.episode_id)
            runner.cancel()
            with contextlib.suppress(BaseException):
                await runner
        except asyncio.CancelledError:
            runner.cancel()
            raise


def _describe(exc: BaseException) -> str:
    """An exception group (anyio) as its first leaf, else the exception's text."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
