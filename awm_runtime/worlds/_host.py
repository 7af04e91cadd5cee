"""Host one scenario's FastAPI app and call its routes as tools, per-episode DB by context.

This module runs wherever scenario code runs (a world worker process). The app is imported
once; every SQLAlchemy connection it opens is routed to the current episode's SQLite file
through a context variable, so one import serves any number of episodes.
"""

from __future__ import annotations

import contextvars
import json
import sqlite3
import sys
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

from awm_runtime._types import ToolResult, ToolSpec
from awm_runtime.worlds._tools import Operation, result_text, split_arguments, tools_from_openapi

CURRENT_DB: contextvars.ContextVar[str] = contextvars.ContextVar("awm_current_db")


def _connect_current() -> sqlite3.Connection:
    return sqlite3.connect(CURRENT_DB.get(), check_same_thread=False)


@contextmanager
def _routing_create_engine() -> Iterator[None]:
    """While scenario code imports, make `create_engine(...)` return a DB-routing engine."""
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    real = sqlalchemy.create_engine

    def create_engine(url: Any = None, *args: Any, **kwargs: Any) -> Any:
        if str(url).startswith("sqlite"):
            return real("sqlite://", creator=_connect_current, poolclass=NullPool)
        return real(url, *args, **kwargs)

    sqlalchemy.create_engine = create_engine  # type: ignore[assignment]
    try:
        yield
    finally:
        sqlalchemy.create_engine = real


def import_scenario_app(module_name: str, code: str) -> Any:
    """Execute `full_code` as a module and return its FastAPI `app`."""
    module = types.ModuleType(module_name)
    module.__file__ = f"<scenario {module_name}>"
    sys.modules[module_name] = module
    with _routing_create_engine():
        exec(compile(code, module.__file__, "exec"), module.__dict__)
    app = module.__dict__.get("app")
    if app is None or not callable(app):
        raise RuntimeError("scenario code defines no ASGI `app`")
    return app


class ScenarioHost:
    """One imported scenario: its tools, and a way to call them against any episode DB."""

    def __init__(self, scenario_id: str, code: str) -> None:
        self.scenario_id = scenario_id
        self.app = import_scenario_app(f"awm_scenario_{scenario_id}", code)
        self.tools: list[ToolSpec]
        self.ops: dict[str, Operation]
        self.tools, self.ops = tools_from_openapi(self.app.openapi())

    async def call(self, db_path: str, tool: str, arguments: dict[str, Any]) -> ToolResult:
        started = time.perf_counter()
        op = self.ops.get(tool)
        if op is None:
            text = f"Error calling {tool}. Unknown tool: {tool}"
            return ToolResult(text=text, is_error=True, status=None)
        path, query, body = split_arguments(op, arguments)
        token = CURRENT_DB.set(db_path)
        try:
            status, raw = await _asgi_request(self.app, op.method.upper(), path, query, body)
        finally:
            CURRENT_DB.reset(token)
        text, is_error = result_text(tool, status, raw)
        return ToolResult(text=text, is_error=is_error, status=status,
                          elapsed_ms=(time.perf_counter() - started) * 1000)


def _query_string(query: dict[str, Any]) -> bytes:
    flat = []
    for key, value in query.items():
        if value is None:
            continue
        values = value if isinstance(value, list) else [value]
        for v in values:
            flat.append((key, json.dumps(v) if isinstance(v, dict) else str(v).lower() if isinstance(v, bool) else v))
    return urlencode(flat, doseq=True).encode()


async def _asgi_request(app: Callable[..., Any], method: str, path: str, query: dict[str, Any],
                        body: Any) -> tuple[int, bytes]:
    """A minimal in-process HTTP request: no sockets, no httpx, a few dozen microseconds."""
    payload = b"" if body is None else json.dumps(body).encode()
    headers = [(b"host", b"world"), (b"content-length", str(len(payload)).encode())]
    if body is not None:
        headers.append((b"content-type", b"application/json"))
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": _query_string(query), "headers": headers,
        "client": ("127.0.0.1", 0), "server": ("world", 80),
    }
    sent = False
    status = 500
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": payload, "more_body": False}
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    try:
        await app(scope, receive, send)
    except Exception:  # Starlette re-raises after sending its 500; a real server would log it
        if not chunks:
            return 500, b"Internal Server Error"
    return status, b"".join(chunks)
