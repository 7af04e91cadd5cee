"""`--worlds mcp+http://HOST:PORT/PATH` and `mcp+stdio:'COMMAND'`: episodes against any MCP server.

Each episode is its own MCP session (streamable HTTP), or its own server process (stdio). Tasks come from
`--tasks-file`. An MCP server has no verifier: with `--judge` the judge model classifies the episode from its
trajectory and final answer; without, the verdict is `no_verifier`.

The MCP SDK's client runs on anyio task groups, which must be entered and left by the same task, so each
session lives in a task of its own and the episode talks to it through a queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO, TypeVar
from urllib.parse import urlsplit

import structlog

from awm_runtime._errors import ConfigError, WorldError
from awm_runtime._types import Message, Task, ToolCall, ToolResult, ToolSpec, Verdict
from awm_runtime.worlds._names import normalize_scenario
from awm_runtime.worlds.remote._base import RemoteOptions, RemoteWorld, TransientWorldError, bounded, retried
from awm_runtime.worlds.remote._tasks import read_tasks_file

log = structlog.get_logger("awm_runtime.worlds")
T = TypeVar("T")
NO_EVIDENCE = "none: this world is an MCP server and has no verifier; judge from the trajectory and the answer"


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

    def __init__(self, spec: str, tasks_file: Path | None, options: RemoteOptions | None = None) -> None:
        super().__init__(spec, options)
        if tasks_file is None:
            raise ConfigError(f"--worlds {spec}: an MCP world needs --tasks-file FILE (JSONL {{\"task\": ..., "
                              f"\"id\": ...}})")
        self.tasks_file = tasks_file
        rest = spec.split("+", 1)[1]
        if rest.startswith("stdio:"):
            self.argv = shlex.split(rest[len("stdio:"):])
            if not self.argv:
                raise ConfigError(f"--worlds {spec}: expected mcp+stdio:'COMMAND ARGS'")
            self.url: str | None = None
            default = Path(self.argv[0]).name
        else:
            parts = urlsplit(rest)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ConfigError(f"--worlds {spec}: expected mcp+http://HOST:PORT/PATH or mcp+stdio:'COMMAND'")
            self.url, self.argv = rest, []
            default = parts.path.rstrip("/").rsplit("/", 1)[-1] or parts.netloc
        self.default_scenario = normalize_scenario(default) or "mcp"
        self._stderr: TextIO | None = None

    async def connect(self) -> None:
        _mcp()
        self._tasks = read_tasks_file(self.tasks_file, self.default_scenario)
        try:
            probe = await retried("connect", 2, self.options, lambda: McpSession.start(self, "probe"))
        except WorldError as exc:
            raise ConfigError(f"--worlds {self.name}: cannot open an MCP session: {exc}") from None
        await probe.close()
        log.info("remote_world_connected", world=self.name, tasks=len(self._tasks), tools=len(probe.tools))

    async def open(self, task: Task, *, episode_id: str) -> McpSession:
        session = await retried("open", self.options.attempts, self.options, lambda: McpSession.start(self, episode_id))
        session.task = task
        return session

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[Any]:
        """A connected, initialised MCP ClientSession (must be used within one task)."""
        mcp = _mcp()
        timeout = timedelta(seconds=self.options.tool_timeout_s + 15.0)
        if self.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            async with streamable_http_client(self.url) as (read, write, _), \
                    mcp.ClientSession(read, write, read_timeout_seconds=timeout) as session:
                await session.initialize()
                yield session
        else:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(command=self.argv[0], args=self.argv[1:])
            async with stdio_client(params, errlog=self._errlog()) as (read, write), \
                    mcp.ClientSession(read, write, read_timeout_seconds=timeout) as session:
                await session.initialize()
                yield session

    def _errlog(self) -> TextIO:
        """Where stdio servers' stderr goes (not the terminal, which holds the live view): one file a world."""
        if self._stderr is None:
            path = Path(tempfile.gettempdir()) / f"awm-mcp-stdio-{os.getpid()}.log"
            self._stderr = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by aclose()
            log.info("mcp_stdio_stderr", world=self.name, path=str(path))
        return self._stderr

    async def aclose(self) -> None:
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


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

    @property
    def tools(self) -> Sequence[ToolSpec]:
        return self._tools

    @classmethod
    async def start(cls, world: McpWorld, episode_id: str) -> McpSession:
        self = cls(world, episode_id)
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
            async with self.world.client() as session:
                listing = await session.list_tools()
                ready.set_result([ToolSpec(name=t.name, description=t.description or "",
                                           input_schema=dict(t.inputSchema or {"type": "object", "properties": {}}))
                                  for t in listing.tools])
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
        from awm_runtime.verifiers import Criteria

        task = self.task.text if self.task is not None else ""
        return await judge.classify(task=task, messages=messages, evidence=NO_EVIDENCE, criteria=Criteria(),
                                    final_answer=final_answer)

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
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
