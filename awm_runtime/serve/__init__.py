"""awm-serve: our world engine behind OpenEnv's WebSocket protocol and MCP, over one session manager."""

from __future__ import annotations

from awm_runtime.serve._app import Listen, create_app, serve
from awm_runtime.serve._episode import OpenEnvEpisode, classify_tool_error
from awm_runtime.serve._hub import CapacityReached, ServeOptions, SessionHub
from awm_runtime.serve._origin import normalize_origin


async def serve_stdio(hub: SessionHub, scenario: str) -> None:
    """One episode of `scenario` as an MCP server on stdin/stdout (imports the MCP SDK on first use)."""
    from awm_runtime.serve._mcp import serve_stdio as run

    await run(hub, scenario)


__all__ = [
    "CapacityReached",
    "Listen",
    "OpenEnvEpisode",
    "ServeOptions",
    "SessionHub",
    "classify_tool_error",
    "create_app",
    "normalize_origin",
    "serve",
    "serve_stdio",
]
