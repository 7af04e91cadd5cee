"""structlog for a run: context first, redaction, JSON last; events stream to a file."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import IO, Any

import orjson
import structlog

from awm_runtime.logs._redact import Redactor


def _orjson_dumps(event: Any, **_: Any) -> str:
    return orjson.dumps(event, default=str).decode()


class _LineWriter:
    """A structlog logger writing rendered lines to one or more text streams; thread-safe."""

    def __init__(self, outputs: list[IO[str]], lock: threading.Lock) -> None:
        self._outputs, self._lock = outputs, lock

    def msg(self, line: str) -> None:
        with self._lock:
            for out in self._outputs:
                out.write(line + "\n")

    log = debug = info = warning = warn = error = critical = exception = fatal = msg


def configure_logging(fh: IO[str], *, secrets: Iterable[str] = (), also: IO[str] | None = None) -> Redactor:
    """Route every structlog event of this process to `fh` as one JSON line (and to `also`)."""
    redactor = Redactor(secrets)
    writer = _LineWriter([fh] if also is None else [fh, also], threading.Lock())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redactor,
            structlog.processors.JSONRenderer(serializer=_orjson_dumps),
        ],
        logger_factory=lambda *args: writer,
        wrapper_class=structlog.make_filtering_bound_logger(0),
        cache_logger_on_first_use=False,
    )
    return redactor


def reset_logging() -> None:
    structlog.reset_defaults()
