"""The OpenEnv adapter: `/ws` (one episode per connection, one reply per frame, in order) and the HTTP routes.

Frame handling follows openenv 0.3.1's `HTTPEnvServer`: a bad frame is an error frame and the session goes on;
a session-level failure (capacity, a non-object frame) is an error frame and the socket closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

import orjson
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from awm_runtime._log import get_logger
from awm_runtime.scheduler import must_finish
from awm_runtime.serve._episode import OpenEnvEpisode
from awm_runtime.serve._hub import CapacityReached, SessionHub
from awm_runtime.serve._wire import (
    ACTION,
    HTTP_NOT_SUPPORTED,
    CloseFrame,
    McpFrame,
    ResetFrame,
    StateFrame,
    StepFrame,
    error_frame,
    metadata,
    schema,
)

log = get_logger("awm_runtime.serve")
IDLE_CLOSE_CODE = 1001  # "going away": the server ends a session that sent nothing for --idle-timeout
TRY_AGAIN_LATER = 1013
CAPACITY_LINGER_S = 5.0


def _dumps(payload: dict[str, Any]) -> str:
    return orjson.dumps(payload, default=str).decode()


async def _answer(episode: OpenEnvEpisode, message: dict[str, Any]) -> dict[str, Any] | None:
    """The one reply to one parsed frame (None for `close`). Raises ValidationError for a bad frame."""
    kind = message.get("type", "")
    if kind == "reset":
        reset = ResetFrame(**message)
        started = time.perf_counter()
        data = await episode.reset(reset.data)
        episode.hub.reset_ms.append((time.perf_counter() - started) * 1000)
        return {"type": "observation", "data": data}
    if kind == "step":
        step = StepFrame(**message)
        return {"type": "observation", "data": await episode.step(ACTION.validate_python(step.data))}
    if kind == "state":
        StateFrame(**message)
        return {"type": "state", "data": episode.state()}
    if kind == "close":
        CloseFrame(**message)
        return None
    if kind == "mcp":  # OpenEnv's JSON-RPC-over-/ws extension: the AWM environment has no MCP server behind it
        frame = McpFrame(**message)
        method, rid = frame.data.get("method"), frame.data.get("id")
        if method in ("tools/list", "tools/call"):
            error = {"code": -32603, "message": "Environment does not support MCP", "data": None}
        else:
            error = {"code": -32601, "message": "Method not found", "data": None}
        return {"type": "mcp", "data": {"jsonrpc": "2.0", "id": rid, "error": error}}
    return error_frame("UNKNOWN_TYPE", f"Unknown message type: {kind}")


async def _receive(websocket: WebSocket, idle_s: float | None) -> str | None:
    """The next text frame, or None when the session sat idle for `idle_s`."""
    try:
        async with asyncio.timeout(idle_s):
            return await websocket.receive_text()
    except TimeoutError:
        return None


async def serve_socket(hub: SessionHub, websocket: WebSocket) -> None:
    """One `/ws` connection, from accept to close; its episode is closed whatever happens."""
    await websocket.accept()
    try:
        slot = hub.claim("ws")
    except CapacityReached as exc:
        # The frame goes out at once, as OpenEnv sends it; the socket stays open until the client's first
        # frame (or a few seconds), so a client that sends before reading gets it as that frame's reply
        # instead of a closed socket. 1013: try again later.
        await websocket.send_text(_dumps(error_frame("CAPACITY_REACHED", str(exc), active_sessions=exc.active,
                                                     max_sessions=exc.limit)))
        with contextlib.suppress(Exception):
            await _receive(websocket, CAPACITY_LINGER_S)
            await websocket.close(TRY_AGAIN_LATER)
        return
    episode = OpenEnvEpisode(hub, slot)
    close_code = 1000
    try:
        while True:
            raw = await _receive(websocket, hub.options.idle_timeout_s)
            if raw is None:
                close_code = IDLE_CLOSE_CODE
                log.info("session_idle_closed", scenario=slot.scenario)
                break
            slot.touch()
            try:
                message = json.loads(raw)
            except json.JSONDecodeError as exc:
                await websocket.send_text(_dumps(error_frame("INVALID_JSON", f"Invalid JSON: {exc}")))
                continue
            if not isinstance(message, dict):
                raise TypeError(f"'{type(message).__name__}' object has no attribute 'get'")
            try:
                reply = await _answer(episode, message)
            except ValidationError as exc:
                reply = error_frame("VALIDATION_ERROR", "Invalid message", errors=exc.errors())
            except Exception as exc:  # a failing frame is reported and the session goes on, as in OpenEnv
                log.warning("frame_failed", error_class=type(exc).__name__, error=str(exc))
                reply = error_frame("EXECUTION_ERROR", str(exc))
            if reply is None:
                break
            await websocket.send_text(_dumps(reply))
    except WebSocketDisconnect:
        pass
    except Exception as exc:  # the session ends; the client is told why if it is still there
        with contextlib.suppress(Exception):
            await websocket.send_text(_dumps(error_frame("SESSION_ERROR", str(exc))))
    finally:
        await must_finish(episode.close())
        hub.release(slot)
        if websocket.client_state == WebSocketState.CONNECTED:
            with contextlib.suppress(Exception):  # the peer may be gone already: closing is best effort
                await websocket.close(close_code)


def routes(hub: SessionHub) -> list[BaseRoute]:
    """`/ws`, `/health`, `/schema`, `/metadata`, `/stats`, and the disabled HTTP `/reset` and `/step`."""

    async def ws(websocket: WebSocket) -> None:
        await serve_socket(hub, websocket)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "healthy"})

    async def schema_route(request: Request) -> Response:
        return JSONResponse(schema())

    async def metadata_route(request: Request) -> Response:
        return JSONResponse(metadata())

    async def stats(request: Request) -> Response:
        return JSONResponse(hub.stats())

    async def http_disabled(request: Request) -> Response:
        return JSONResponse(HTTP_NOT_SUPPORTED, status_code=400)

    return [WebSocketRoute("/ws", ws), Route("/health", health), Route("/schema", schema_route),
            Route("/metadata", metadata_route), Route("/stats", stats),
            Route("/reset", http_disabled, methods=["POST"]), Route("/step", http_disabled, methods=["POST"])]
