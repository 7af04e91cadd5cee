"""Host one scenario's FastAPI app and call its routes as tools, per-episode DB by context.

This module runs where scenario code runs: a world worker process (and `awm-worlds pack`, on
our own trusted sources). The app is imported once; every SQLAlchemy connection it opens is
routed to the current episode's SQLite file through a context variable, so one import serves
any number of episodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import gc
import json
import os
import sqlite3
import sys
import threading
import time
import types
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote, urlencode

from awm_runtime.worlds._argcheck import plain_check
from awm_runtime.worlds._openapi import install as install_openapi_walk
from awm_runtime.worlds._tools import (
    Operation,
    invalid_arguments_text,
    query_value,
    result_text,
    split_arguments,
    tools_from_openapi,
    unknown_tool_text,
)

CURRENT_DB: contextvars.ContextVar[str] = contextvars.ContextVar("awm_current_db")
_FOREIGN_KEYS: contextvars.ContextVar[bool] = contextvars.ContextVar("awm_foreign_keys", default=False)
LIFESPAN_TIMEOUT_S = 30.0
_UNCOMPILED = object()
_LIFESPANS: list[asyncio.Task[None]] = []  # each app's lifespan task lives as long as its worker


def release_db(db_path: str) -> None:
    """Close the idle connections kept for `db_path` (the import DB, once the app has started)."""
    with _POOL_LOCK:
        records = [_IDLE.pop(k) for k in [k for k in _IDLE if k[1] == db_path]]
    for record in records:
        record.close()


def keep_within(open_files: int) -> None:
    """Keep no more idle connections than a process allowed `open_files` descriptors has room for: the rest
    (pipes, call threads' connections, the scenario's own files) gets `SPARE_FILES`."""
    global IDLE_CONNECTIONS
    IDLE_CONNECTIONS = max(16, min(IDLE_CONNECTIONS, open_files - SPARE_FILES))


def drop_unlinked() -> int:
    """Close the kept connections whose episode DB was removed (its episode ended); return how many. An open
    connection would keep the removed file's pages, which count against its scenario's disk quota."""
    with _POOL_LOCK:
        keys = list(_IDLE)
    gone = [k for k in keys if not os.path.exists(k[1])]
    with _POOL_LOCK:
        records = [_IDLE.pop(k) for k in gone if k in _IDLE]
    for record in records:
        record.close()
    return len(records)


def _connect_current() -> sqlite3.Connection:
    # mode=rw: an episode DB that is gone (its episode ended while a call was on its way) is an error, not a new
    # empty file that would hold its scenario's disk until the worker exits.
    conn = sqlite3.connect(f"file:{quote(CURRENT_DB.get())}?mode=rw", uri=True, check_same_thread=False)
    # An episode DB is disposable: if its worker dies mid-write the episode ends anyway, so the
    # rollback journal can live in memory and nothing needs syncing.
    conn.execute("PRAGMA journal_mode=MEMORY")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA temp_store=MEMORY")  # a world worker may create no files: sorts and temp tables in RAM
    if _FOREIGN_KEYS.get():
        conn.execute("PRAGMA foreign_keys=ON")
    return conn


# Idle connections kept across tool calls, per (engine pool, episode DB): a new SQLite connection
# costs a connect plus a parse of the whole schema (~0.3 ms with 20 tables) on its first statement.
# The runtime sends an episode's calls to the worker that served its last one, so a worker keeps one for
# each episode it serves (bounded LRU), each shrunk to its parsed schema between calls (50-64 KiB instead
# of ~135), and closes those whose DB file is gone (`drop_unlinked`): the episode has ended.
_IDLE: OrderedDict[tuple[int, str], Any] = OrderedDict()
IDLE_CONNECTIONS = 1024
SPARE_FILES = 256  # a world worker's descriptors beside its kept connections
SWEEP_S = 2.0  # how often a world worker closes the kept connections of ended episodes
_CHECKED_OUT: dict[str, int] = {}  # episode DB -> connections handed out and not yet returned
_POOL_LOCK = threading.Lock()  # tool calls run on several threads of a world worker


@functools.cache
def episode_pool_class() -> type:
    """A SQLAlchemy pool that hands each episode DB its own kept-open connection (bounded LRU)."""
    from sqlalchemy.pool import Pool

    class EpisodePool(Pool):
        def status(self) -> str:
            return f"EpisodePool({len(_IDLE)} idle)"

        def _do_get(self) -> Any:
            key = (id(self), CURRENT_DB.get())
            with _POOL_LOCK:
                record = _IDLE.pop(key, None)
                _CHECKED_OUT[key[1]] = _CHECKED_OUT.get(key[1], 0) + 1
            if record is None or record.dbapi_connection is None:
                record = self._create_connection()
                record.info["awm_key"] = key
            return record

        def _do_return_conn(self, record: Any) -> None:
            key = record.info.get("awm_key")
            closing = []
            if key is not None and record.dbapi_connection is not None:
                with contextlib.suppress(sqlite3.Error):  # keep its parsed schema, free its page cache
                    record.dbapi_connection.execute("PRAGMA shrink_memory")
            with _POOL_LOCK:
                if key is not None:
                    _CHECKED_OUT[key[1]] = _CHECKED_OUT.get(key[1], 1) - 1
                if key is None or key in _IDLE or record.dbapi_connection is None:
                    closing.append(record)
                else:
                    _IDLE[key] = record
                    while len(_IDLE) > IDLE_CONNECTIONS:
                        closing.append(_IDLE.popitem(last=False)[1])
            for old in closing:
                old.close()

        def dispose(self) -> None:
            with _POOL_LOCK:
                records = [_IDLE.pop(k) for k in [k for k in _IDLE if k[0] == id(self)]]
            for record in records:
                record.close()

        def recreate(self) -> Pool:
            return self.__class__(self._creator, recycle=self._recycle, echo=self.echo,
                                  logging_name=self._orig_logging_name, reset_on_return=self._reset_on_return,
                                  pre_ping=self._pre_ping, _dispatch=self.dispatch, dialect=self._dialect)

    return EpisodePool


@contextmanager
def _routing_create_engine() -> Iterator[None]:
    """While scenario code imports, make `create_engine(sqlite…)` return a DB-routing engine."""
    import sqlalchemy

    real = sqlalchemy.create_engine

    def create_engine(url: Any = None, *args: Any, **kwargs: Any) -> Any:
        if str(url).startswith("sqlite"):
            return real("sqlite://", creator=_connect_current, poolclass=episode_pool_class())
        return real(url, *args, **kwargs)

    sqlalchemy.create_engine = create_engine  # type: ignore[assignment]
    try:
        yield
    finally:
        sqlalchemy.create_engine = real


def import_scenario_app(module_name: str, code: str) -> Any:
    """Execute `full_code` as a module and return its ASGI `app`."""
    module = types.ModuleType(module_name)
    module.__file__ = f"<scenario {module_name}>"
    sys.modules[module_name] = module
    try:
        with _routing_create_engine():
            exec(compile(code, module.__file__, "exec"), module.__dict__)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    app = module.__dict__.get("app")
    if app is None or not callable(app):
        raise RuntimeError("scenario code defines no ASGI `app`")
    return app


async def _lifespan_startup(app: Callable[..., Any]) -> None:
    """Run the app's startup handlers as uvicorn would; the shutdown half is never sent."""
    started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    queue = [{"type": "lifespan.startup"}]

    async def receive() -> dict[str, Any]:
        if queue:
            return queue.pop()
        await stop.wait()
        return {"type": "lifespan.shutdown"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete" and not started.done():
            started.set_result(None)
        elif message["type"] == "lifespan.startup.failed" and not started.done():
            started.set_exception(RuntimeError(f"app startup failed: {message.get('message', '')}"))

    async def run() -> None:
        try:
            await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
        except Exception:  # as uvicorn's lifespan "auto": raising without startup.failed means unsupported
            pass
        finally:
            if not started.done():
                started.set_result(None)

    task = asyncio.get_running_loop().create_task(run())
    _LIFESPANS.append(task)
    await asyncio.wait_for(started, LIFESPAN_TIMEOUT_S)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Import a scenario without the cyclic GC, then collect once and freeze what is left.

    An import allocates ~10^5 long-lived objects (routes, models, schemas), and each automatic
    collection on the way walks every object already there. Frozen objects are skipped by later
    collections, so tool calls' collections leave the app alone, as they leave what the zygote
    imported (measured in issue 18's many-scenario workers: 212 -> 147 ms CPU per import; a world
    worker now holds one scenario, so its import gains less)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        gc.freeze()
        if enabled:
            gc.enable()


class ScenarioHost:
    """One imported scenario: its tools, and a way to call them against any episode DB."""

    def __init__(self, scenario_id: str, code: str, *, import_db: str, foreign_keys: bool = False,
                 validate_arguments: bool = True) -> None:
        self.scenario_id = scenario_id
        self.foreign_keys = foreign_keys
        self.validate_arguments = validate_arguments
        os.environ["DATABASE_PATH"] = f"sqlite:///{import_db}"
        self.import_db = import_db
        token, fk = CURRENT_DB.set(import_db), _FOREIGN_KEYS.set(foreign_keys)
        self.tools: list[dict[str, Any]]
        self.ops: dict[str, Operation]
        try:
            with _collector_paused():
                self.app = import_scenario_app(f"awm_scenario_{scenario_id}", code)
                install_openapi_walk()
                self.tools, self.ops = tools_from_openapi(self.app.openapi())
        finally:
            CURRENT_DB.reset(token)
            _FOREIGN_KEYS.reset(fk)
        self._schemas = {t["name"]: t["input_schema"] for t in self.tools}
        self._validators: dict[str, Any] = {}
        self._plain: dict[str, Any] = {}  # tool -> its schema's plain check (None: beyond it), compiled on first use

    async def start(self) -> None:
        """Run the app's startup handlers against the import DB, as uvicorn would before serving."""
        token, fk = CURRENT_DB.set(self.import_db), _FOREIGN_KEYS.set(self.foreign_keys)
        try:
            await _lifespan_startup(self.app)
        finally:
            CURRENT_DB.reset(token)
            _FOREIGN_KEYS.reset(fk)

    def release_import_db(self) -> None:
        """The app has started: its own connections to the import DB are closed (it is a scratch copy)."""
        gc.collect()
        release_db(self.import_db)

    def _invalid(self, tool: str, arguments: dict[str, Any]) -> str | None:
        """mcp's low-level server checks arguments against the input schema before the handler runs."""
        if not self.validate_arguments:
            return None
        plain = self._plain.get(tool, _UNCOMPILED)
        if plain is _UNCOMPILED:
            plain = self._plain[tool] = plain_check(self._schemas[tool])
        if plain is not None and plain(arguments):  # surely valid: jsonschema would find nothing (_argcheck)
            return None
        validator = self._validators.get(tool)
        if validator is None:
            from jsonschema import validators

            schema = self._schemas[tool]
            validator = self._validators[tool] = validators.validator_for(schema)(schema)
        from jsonschema.exceptions import best_match

        error = best_match(validator.iter_errors(arguments))
        return None if error is None else str(error.message)

    async def call(self, db_path: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        op = self.ops.get(tool)
        if op is None:
            return {"text": unknown_tool_text(tool), "is_error": True, "status": None}
        if (problem := self._invalid(tool, arguments)) is not None:
            return {"text": invalid_arguments_text(problem), "is_error": True, "status": None}
        path, query, headers, body = split_arguments(op, arguments)
        token, fk = CURRENT_DB.set(db_path), _FOREIGN_KEYS.set(self.foreign_keys)
        try:
            status, raw = await asgi_request(self.app, op.method.upper(), path, query, headers, body)
        finally:
            CURRENT_DB.reset(token)
            _FOREIGN_KEYS.reset(fk)
        if _CHECKED_OUT.get(db_path):
            # A handler raised with its session open (generated code has no try/finally). Its
            # connection sits in a reference cycle, possibly holding the DB's write lock: collect
            # it now, which rolls it back and returns it, rather than when the GC gets round to it.
            gc.collect()
        text, is_error = result_text(tool, status, raw)
        return {"text": text, "is_error": is_error, "status": status,
                "elapsed_ms": (time.perf_counter() - started) * 1000}


def _query_string(query: dict[str, Any]) -> bytes:
    pairs: list[tuple[str, str]] = []
    for key, value in query.items():
        for v in value if isinstance(value, (list, tuple)) else [value]:
            pairs.append((key, query_value(v)))
    return urlencode(pairs).encode()


async def asgi_request(app: Callable[..., Any], method: str, path: str, query: dict[str, Any],
                       headers: dict[str, str], body: Any) -> tuple[int, bytes]:
    """A minimal in-process HTTP request: no sockets, no httpx, a few dozen microseconds."""
    payload = b"" if body is None else json.dumps(body).encode()
    raw_headers = [(b"host", b"apiserver"), (b"content-length", str(len(payload)).encode())]
    if body is not None:
        raw_headers.append((b"content-type", b"application/json"))
    raw_headers += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": quote(path).encode(), "root_path": "",
        "query_string": _query_string(query), "headers": raw_headers,
        "client": ("127.0.0.1", 0), "server": ("apiserver", 80), "state": {},
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
