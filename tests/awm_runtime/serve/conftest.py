"""awm-serve in this test's event loop, on a real socket (uvicorn, port 0), over a real world."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.serve import Listen, ServeOptions, SessionHub, create_app, serve
from awm_runtime.worlds import AwmWorld, WorldOptions, load_local_worlds
from tests.awm_runtime.worlds.trap_data import write_trap_dataset


@dataclass
class Served:
    url: str
    hub: SessionHub

    @property
    def ws_url(self) -> str:
        return self.url.replace("http", "ws", 1) + "/ws"


@contextlib.asynccontextmanager
async def running(world: AwmWorld, *, mcp: bool = False, ping_s: float = 20.0, judge: Any = None,
                  **options: Any) -> AsyncIterator[Served]:
    """Serve `world` until the block ends (and at most 300 s)."""
    hub = SessionHub(world, ServeOptions(**options), judge=judge)
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    listen = Listen(host="127.0.0.1", port=0, ws_ping_interval_s=ping_s, ws_ping_timeout_s=ping_s,
                    max_lifetime_s=300)
    task = asyncio.create_task(serve(create_app(hub, mcp=mcp), listen, ready.set_result, stop=stop))
    try:
        url = await asyncio.wait_for(asyncio.shield(ready), 30)
        yield Served(url, hub)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def until(condition: Any, within_s: float = 10.0) -> bool:
    """Poll `condition()` until it is true (True) or `within_s` passes (False)."""
    deadline = asyncio.get_running_loop().time() + within_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


@pytest.fixture
async def builtin_world() -> Any:
    world = load_local_worlds("builtin", options=WorldOptions(workers=2))
    yield world
    await world.aclose()


@pytest.fixture(scope="session")
def trap_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_trap_dataset(tmp_path_factory.mktemp("trap_serve"))


@pytest.fixture
async def trap(trap_path: Path) -> Any:
    world = load_local_worlds(trap_path, options=WorldOptions(workers=2, tool_timeout_s=3.0))
    yield world
    await world.aclose()
