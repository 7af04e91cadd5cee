"""The awm-serve ASGI app and its server: OpenEnv's routes, optionally MCP (`/mcp/<scenario>`, `/<scenario>/mcp`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from awm_runtime._log import get_logger
from awm_runtime.serve._hub import SessionHub
from awm_runtime.serve._openenv import routes
from awm_runtime.serve._origin import OriginGuard, OriginPolicy

log = get_logger("awm_runtime.serve")


def create_app(hub: SessionHub, *, mcp: bool = False, allow_origins: tuple[str, ...] = ()) -> Starlette:
    """OpenEnv's `/ws` and HTTP routes over `hub`; with `mcp`, also MCP (streamable HTTP) at `/mcp/<scenario>`
    and `/<scenario>/mcp`. Every route answers its own origin only, plus `allow_origins` (`serve._origin`)."""
    app_routes = routes(hub)
    manager = None
    if mcp:
        from awm_runtime.serve._mcp import McpRoute, http_manager

        manager = http_manager(hub)
        route = McpRoute(hub, manager)
        app_routes.append(Route("/mcp/{scenario}", route, methods=["GET", "POST", "DELETE"]))
        # The same endpoint where MCP clients that recognise streamable HTTP by a trailing /mcp (the MCP
        # Inspector) look for it.
        app_routes.append(Route("/{scenario}/mcp", route, methods=["GET", "POST", "DELETE"]))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if manager is not None:
                await stack.enter_async_context(manager.run())
            yield

    guard = Middleware(OriginGuard, policy=OriginPolicy.of(allow_origins))
    return Starlette(routes=app_routes, lifespan=lifespan, middleware=[guard])


@dataclass(frozen=True, slots=True)
class Listen:
    """Where and how the server listens. Pings find sockets whose peer vanished without closing them."""

    host: str = "127.0.0.1"
    port: int = 8000
    ws_ping_interval_s: float = 20.0  # OpenEnv's client pings every 20 s with a 20 s timeout too
    ws_ping_timeout_s: float = 20.0
    max_lifetime_s: float | None = None


async def serve(app: Starlette, listen: Listen, on_ready: Callable[[str], Awaitable[None] | None] | None = None,
                *, stop: asyncio.Event | None = None) -> None:
    """Run `app` until SIGINT/SIGTERM, `stop` or `max_lifetime_s`; `on_ready` gets the base URL once it listens."""
    import uvicorn

    from awm_runtime._sockets import bound_tcp_socket

    sock = bound_tcp_socket(listen.host, listen.port)
    # No per-message deflate: on loopback and LANs compressing every tool list costs more CPU than it saves.
    config = uvicorn.Config(app, ws="websockets-sansio", ws_ping_interval=listen.ws_ping_interval_s,
                            ws_ping_timeout=listen.ws_ping_timeout_s, ws_per_message_deflate=False,
                            log_level="warning", lifespan="on", timeout_graceful_shutdown=5, backlog=4096)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                await task  # it failed to start: raise why
                return
            await asyncio.sleep(0.02)
        host, port = sock.getsockname()[:2]
        if on_ready is not None:
            maybe = on_ready(f"http://{host}:{port}")
            if maybe is not None:
                await maybe
        waits: set[asyncio.Future[Any]] = {task}
        if stop is not None:
            waits.add(asyncio.ensure_future(stop.wait()))
        done, pending = await asyncio.wait(waits, timeout=listen.max_lifetime_s, return_when=asyncio.FIRST_COMPLETED)
        for waiter in pending - {task}:
            waiter.cancel()
        if task not in done:
            log.info("server_stopping", reason="stop" if done else "max_lifetime", seconds=listen.max_lifetime_s)
            server.should_exit = True
        await task
    finally:
        if not task.done():
            server.should_exit = True
            with contextlib.suppress(Exception):
                await task
        with contextlib.suppress(OSError):
            sock.close()
