"""Spare stdio MCP servers, started ahead of the episodes that will use them.

Starting a server process costs about a second on a quiet 2-core machine, and 2 to 5 s under load
(docs/mcp.md): python servers import the MCP SDK, npm ones start node. A world keeps a few started,
initialised and untouched servers (each with its own empty `{episode_dir}`), so an episode takes one at
once and another starts behind it. A spare is as fresh as a new server: it has only answered the
handshake and the tool listing. One that died while it waited is dropped; a spare that fails to start
leaves the episode to start its own, whose error (with the server's last lines) is then the episode's.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable, Coroutine
from typing import Any, Generic, Protocol, TypeVar


class Spare(Protocol):
    """A session started ahead of use (a world server process or connection) that may die while it waits."""

    @property
    def alive(self) -> bool:
        """Whether the session can still be handed to an episode."""
        ...

    async def close(self) -> None:
        """Stop the session and release what it holds."""
        ...


S = TypeVar("S", bound=Spare)


class Spares(Generic[S]):
    """Up to `size` sessions started by `start(name)` ahead of use; filled once the first episode asks."""

    def __init__(self, size: int, start: Callable[[str], Coroutine[Any, Any, S]]) -> None:
        self.size = size
        self._start = start
        self._ready: list[S] = []
        self._starting: set[asyncio.Task[S]] = set()
        self._names = itertools.count()
        self._closed = False

    def _fill(self) -> None:
        while not self._closed and len(self._ready) + len(self._starting) < self.size:
            task = asyncio.create_task(self._start(f"spare-{next(self._names)}"), name="mcp-spare-server")
            self._starting.add(task)
            task.add_done_callback(self._started)

    def _started(self, task: asyncio.Task[S]) -> None:
        self._starting.discard(task)
        if task.cancelled() or task.exception() is not None:
            return  # the episode that needs a server starts its own and learns why
        self._ready.append(task.result())  # after aclose() began too: it closes what is ready once starts end

    async def take(self) -> S | None:
        """A started spare (another starts behind it), or None when none is ready yet."""
        if self.size <= 0:
            return None
        taken = None
        while self._ready and taken is None:
            session = self._ready.pop(0)
            if session.alive:
                taken = session
            else:
                await session.close()
        self._fill()
        return taken

    async def aclose(self) -> None:
        """Close the spares, and those still starting."""
        self._closed = True
        starting = list(self._starting)
        for task in starting:
            task.cancel()
        for task in starting:
            with contextlib.suppress(BaseException):
                await task
        ready, self._ready = self._ready, []
        for session in ready:
            await session.close()
