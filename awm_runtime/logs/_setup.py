"""structlog for a run: context first, redaction, JSON last; events stream to events.jsonl.

Events are buffered and appended in whole lines with O_APPEND, so several processes (the shards of
a run) can share one events.jsonl without tearing each other's lines, and memory stays flat.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any

import structlog
from structlog.typing import EventDict

from awm_runtime._encodable import dumps_encodable, encodable_text
from awm_runtime.logs._redact import Redactor, scrub_bytes

FLUSH_BYTES = 1 << 16


def _text(value: Any) -> str:
    return encodable_text(str(value))[0]


def _orjson_dumps(event: Any, **_: Any) -> str:
    """One event as JSON. Text that is not UTF-8 (a lone surrogate from the agent) becomes U+FFFD, and the
    event says how many (`replaced_chars`): an event is never lost to its own text."""
    line, replaced = dumps_encodable(event, default=_text)
    if replaced:
        counted = {**event, "replaced_chars": replaced} if isinstance(event, dict) else event
        line = dumps_encodable(counted, default=_text)[0]
    return line.decode()


class EventStream:
    """A structlog logger: rendered lines go to a file (appended in whole lines) and optionally a stream.

    Lines are buffered up to FLUSH_BYTES; `flush()` is called by the run every second and at the end.
    Thread-safe. After `close()` further lines are dropped rather than raising in some later caller."""

    def __init__(self, path: Path | str, *, also: IO[str] | None = None, flush_bytes: int = FLUSH_BYTES) -> None:
        self.path = Path(path)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._also = also
        self._flush_bytes = flush_bytes
        self._buf: list[bytes] = []
        self._size = 0
        self._lock = threading.Lock()
        self.lines = 0
        self.dropped = 0  # lines a failed write (a full disk) could not keep

    def msg(self, line: str) -> None:
        data = line.encode() + b"\n"
        with self._lock:
            if self._fd is None:
                return
            self._buf.append(data)
            self._size += len(data)
            self.lines += 1
            if self._also is not None:
                self._also.write(line + "\n")
            if self._size >= self._flush_bytes:
                self._flush_locked()

    log = debug = info = warning = warn = error = critical = exception = fatal = msg

    def append_lines(self, data: bytes) -> None:
        """Whole lines rendered elsewhere (another machine's events), newline-terminated."""
        if not data:
            return
        with self._lock:
            if self._fd is None:
                return
            self._buf.append(data)
            self._size += len(data)
            self.lines += data.count(b"\n")
            if self._also is not None:
                self._also.write(data.decode("utf-8", "replace"))
            if self._size >= self._flush_bytes:
                self._flush_locked()

    write = staticmethod(os.write)  # the write syscall (a test injects a full disk here)

    def _flush_locked(self) -> None:
        if not self._buf or self._fd is None:
            return
        data = scrub_bytes(b"".join(self._buf))
        self._buf.clear()
        self._size = 0
        before = os.fstat(self._fd).st_size
        view = memoryview(data)
        try:
            while view:
                view = view[self.write(self._fd, view):]
        except OSError:  # a full disk: logging never raises into the caller; the lines are dropped, counted
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, before)  # no torn line: the file ends on a whole event
            self.dropped += data.count(b"\n")

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()
            if self._also is not None:
                self._also.flush()

    def close(self) -> None:
        with self._lock:
            self._flush_locked()
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            if self._also is not None:
                self._also.flush()


class _StreamWriter:
    """A structlog logger writing lines to text streams (tests, embedding)."""

    def __init__(self, outputs: list[IO[str]]) -> None:
        self._outputs = outputs
        self._lock = threading.Lock()

    def msg(self, line: str) -> None:
        with self._lock:
            for out in self._outputs:
                out.write(line + "\n")

    log = debug = info = warning = warn = error = critical = exception = fatal = msg


def configure_logging(target: EventStream | IO[str], *, secrets: Iterable[str] = (),
                      also: IO[str] | None = None,
                      on_warning: Callable[[Mapping[str, Any]], None] | None = None) -> Redactor:
    """Route every structlog event of this process to `target` as one JSON line (and to `also`); with
    `on_warning`, also hand it each warning or error event, redacted (the CLI shows them to the user)."""
    redactor = Redactor(secrets)

    def tap(_logger: Any, _name: str, event: EventDict) -> EventDict:
        if on_warning is not None and event.get("level") in ("warning", "error", "critical"):
            on_warning(event)
        return event

    writer: Any = target if isinstance(target, EventStream) else _StreamWriter(
        [target] if also is None else [target, also])
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redactor,
            tap,
            structlog.processors.JSONRenderer(serializer=_orjson_dumps),
        ],
        logger_factory=lambda *args: writer,
        wrapper_class=structlog.make_filtering_bound_logger(0),
        cache_logger_on_first_use=False,
    )
    return redactor


def reset_logging() -> None:
    structlog.reset_defaults()
