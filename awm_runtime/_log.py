"""The package's loggers, and where their lines go when the embedding program says nothing.

structlog's default prints to stdout, which belongs to the embedding program (and may carry JSON):
unless the program configured structlog itself, our log lines go to stderr. That is set up when the
first module that logs is imported, or a name of the public API is first used; not when the package
itself is imported. The verifier server and the world zygote import parts of the package that never
log, and structlog (with rich behind it) would add ~20 MiB to every process they fork: each fork, and
each exit, pays for those pages (measured: 3.1 -> 2.0 ms of CPU per verification's fork and exit).
"""

from __future__ import annotations

import sys
from typing import Any

import structlog

_decided = False


def default_to_stderr() -> None:
    """Send structlog to stderr unless it was configured already (once per process)."""
    global _decided
    if not _decided:
        _decided = True
        if not structlog.is_configured():
            structlog.configure(logger_factory=lambda *args: structlog.PrintLogger(sys.stderr))


def get_logger(name: str) -> Any:
    """structlog's logger `name`, after `default_to_stderr`."""
    default_to_stderr()
    return structlog.get_logger(name)


def console_logging() -> None:
    """Until a run directory takes over the event stream: warnings only, on stderr (stdout may be JSON)."""
    import logging

    import structlog

    from awm_runtime._printable import escape_event

    processors = [escape_event, *structlog.get_config()["processors"]]  # world text never drives the terminal
    if any(p is escape_event for p in processors[1:]):
        processors = processors[1:]
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr), processors=processors,
                        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


__all__ = ["console_logging", "default_to_stderr", "get_logger"]
