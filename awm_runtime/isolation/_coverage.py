"""Coverage of the processes behind the boundary, while a test run measures this process (never otherwise).

coverage.py starts itself in every Python process that finds COVERAGE_PROCESS_CONFIG in its environment
(`[tool.coverage.run] patch = ["subprocess"]` in pyproject.toml sets it), and each process writes its own
data file beside the suite's when it exits. The boundary would stop both: a scrubbed environment drops the
variable, and a confined process may create no file (Landlock) of any size (RLIMIT_FSIZE). So, and only when
coverage measures the calling process:

- `environment()` lets that one variable through to the helpers started with a scrubbed environment;
- `data_rules()` lets a confined process create and write files in the folder of the data file;
- `keep_measuring()` raises the file-size limit back, just as the process exits (`os._exit` or at exit), so
  that its data can be written; until then the limit holds as it does in a normal run;
- `save()` writes the data before a process that is about to be killed says it is done, and `checkpoint()`
  after each request of a process that is only ever killed.

With coverage off (every real run) each returns nothing and changes nothing.
"""

from __future__ import annotations

import atexit
import os
import posix
import resource
import sys
from typing import Any

VARIABLE = "COVERAGE_PROCESS_CONFIG"


def _measuring() -> Any | None:
    """The Coverage object measuring this process, or None (coverage is not even imported in a normal run)."""
    module = sys.modules.get("coverage")
    return None if module is None else module.Coverage.current()


def environment() -> dict[str, str]:
    """The variable that starts coverage in a child, when this process is measured and has it; else {}."""
    if _measuring() is None or VARIABLE not in os.environ:
        return {}
    return {VARIABLE: os.environ[VARIABLE]}


def data_rules() -> tuple[str, ...]:
    """The folder a measured process writes its data file in (nothing when it is not measured)."""
    cov = _measuring()
    if cov is None:
        return ()
    return (os.path.dirname(os.path.abspath(cov.config.data_file)),)


def file_size_hard_limit(soft: int) -> int:
    """The hard RLIMIT_FSIZE to set beside `soft`: `soft` itself, or no limit while measured (see below)."""
    return resource.RLIM_INFINITY if _measuring() is not None else soft


def keep_measuring() -> None:
    """In a measured, confined process: lift the soft file-size limit just before it exits, so that coverage
    can write the data it collected (its own `os._exit` patch and exit handler save it)."""
    if _measuring() is None:
        return
    exit_now = os._exit

    def lift() -> None:
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))

    def exit_measured(status: int) -> None:
        lift()
        exit_now(status)

    setattr(os, "_exit", exit_measured)  # noqa: B010 - replaces coverage's own patch, which it then calls
    atexit.register(lift)  # runs before coverage's exit handler, registered when it started


def save() -> None:
    """In a measured process about to be cut short (a verifier job is killed as soon as its reply arrives):
    write the data collected so far now, with the file-size limit lifted, and exit later without saving again
    (a second save, killed halfway, would leave a data file that is not one). Nothing when not measured."""
    cov = _measuring()
    if cov is None:
        return
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    cov.save()
    setattr(os, "_exit", posix._exit)  # noqa: B010 - the exit without coverage's patch, which would save again


def checkpoint() -> None:
    """In a measured process that the runtime ends with SIGKILL (the world zygote): write what it has run so far,
    and go on measuring. Nothing when not measured."""
    cov = _measuring()
    if cov is not None:
        cov.save()
