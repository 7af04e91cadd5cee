"""The MCP adapter: each MCP session is one fresh episode of a scenario, its tools served as MCP tools.

Streamable HTTP at `/mcp/<scenario>` (one episode per MCP session, ended by the client's DELETE or the idle
timeout), or stdio for one scenario (one episode per process). The hidden OpenEnv tools are not offered:
an MCP client gets the scenario's tools and nothing that returns a reward.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from awm_runtime._errors import WorldError
from awm_runtime._log import get_logger
from awm_runtime._types import Task, ToolCall
from awm_runtime.serve._hub import SessionHub, Slot
from awm_runtime.worlds import AwmSession

log = get_logger("awm_runtime.serve")


@dataclass(slots=True)
class _Episode:
    """One MCP session's world, opened on its first request (the scenario comes from the URL)."""

    slot: Slot
    scenario: str | None = None
    session: AwmSession | None = None
    calls: int = 0


def mcp_server(hub: SessionHub, *, scenario: str | None = None) -> Server[Any, Any]:
    """An MCP server whose every session is its own episode; `scenario` fixes it (stdio), else the URL does."""

    @contextlib.asynccontextmanager
    async def lifespan(server: Server[Any, Any]) -> AsyncIterator[_Episode]:
        episode = _Episode(hub.claim("mcp"), scenario)
        try:
            yield episode
        finally:
            if episode.session is not None:
                await episode.session.close()
            hub.release(episode.slot)

    from awm_runtime._version import __version__

    # serverInfo names us, at our version (without `version` the SDK reports its own package's version).
    server: Server[Any, Any] = Server("awm-serve", version=__version__, lifespan=lifespan)

    async def world() -> tuple[_Episode, AwmSession]:
        ctx = server.request_context
        episode: _Episode = ctx.lifespan_context
        episode.slot.touch()
        if episode.session is None:
            request = ctx.request
            name = episode.scenario or (request.path_params.get("scenario") if request is not None else None)
            sc = hub.scenario(name or "")
            if sc is None:
                raise WorldError(f"Scenario '{name}' not found")
            episode.scenario = episode.slot.scenario = sc.id
            episode.session = await hub.world.open(Task(scenario=sc.id, task_idx=-1, text=""),
                                                   episode_id=f"mcp-{id(episode):x}")
        return episode, episode.session

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        _, session = await world()
        return [types.Tool(name=t.name, description=t.description, inputSchema=t.input_schema)
                for t in session.tools]

    @server.call_tool(validate_input=False)  # the world validates, with mcp's texts
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        episode, session = await world()
        episode.calls += 1
        result = await session.call_tool(ToolCall(id=f"mcp_{episode.calls}", name=name, arguments=arguments or {}))
        return types.CallToolResult(content=[types.TextContent(type="text", text=result.text)],
                                    isError=result.is_error)

    return server


class McpRoute:
    """ASGI app for `/mcp/<scenario>`: unknown scenarios answer 404 before any session starts."""

    def __init__(self, hub: SessionHub, manager: Any) -> None:
        self.hub = hub
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        name = scope.get("path_params", {}).get("scenario", "")
        if scope["type"] == "http" and self.hub.scenario(name) is None:
            await JSONResponse({"error": f"Scenario '{name}' not found"}, status_code=404)(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)


class _TeardownNoise(logging.Filter):
    """mcp 1.x logs a traceback when a session ends while its GET stream waits (its writer finds the stream
    closed); that is the normal end of a session, not an error. Every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (record.getMessage() == "Error in standalone SSE writer"
                    and type(exc).__name__ == "ClosedResourceError")


def http_manager(hub: SessionHub) -> Any:
    """The streamable-HTTP session manager for `/mcp/<scenario>` (enter `manager.run()` in the app's lifespan)."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    noisy = logging.getLogger("mcp.server.streamable_http")
    if not any(isinstance(f, _TeardownNoise) for f in noisy.filters):
        noisy.addFilter(_TeardownNoise())

    idle = hub.options.idle_timeout_s
    return StreamableHTTPSessionManager(mcp_server(hub), session_idle_timeout=idle, stateless=False)


async def serve_stdio(hub: SessionHub, scenario: str) -> None:
    """One episode of `scenario` over stdin/stdout (the process is the session)."""
    from mcp.server.stdio import stdio_server

    server = mcp_server(hub, scenario=scenario)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
