"""Our console commands called in the test process, as a subprocess would see them (issue 50, "cheaper e2e").

An e2e test whose subject is a run's files or output, not the process, saves a Python start-up, ~1.5 s of imports
and a preflight per command by calling the same entry point (`awm_runtime.cli.run_main` ...) here. What a
subprocess gives for free is rebuilt around the call, and undone after it, so runs stay independent of each other
and of the tests around them:

- stdout and stderr: file descriptors 1 and 2 point at temporary files for the call (so the lines of world workers,
  servers and other children land in the result, as they do in a subprocess's pipes), and `sys.stdout`/`sys.stderr`
  are text files on them (rich consoles and structlog's PrintLogger look the stream up or are configured inside the
  call, so they write there too);
- `SystemExit` is the return code; any other exception is a traceback on stderr and code 1, as Python's own exit;
- `env` is applied over `os.environ`, which is restored in full afterwards; so are the cwd and `sys.argv`;
- the process-global state the commands touch starts as a fresh process has it and is put back afterwards: the
  structlog and logging configuration, the SIGINT/SIGTERM (and SIGCHLD/SIGPIPE/SIGXFSZ) handlers, the dumpable
  flag `mark_private` clears, the open-file limit `raise_open_files` raises, warning filters, and the module
  registries of awm_runtime (endpoint limiters, local model servers, the model transport and call-process pool,
  HTTP sessions, plug-ins registered in process, the keys the redactor knows, the once-per-process warnings and
  full-disk notes).

A command that leaves a local model server or a call-process pool running is a leak; `run_cli` stops what is
left and raises, so it cannot pass unnoticed.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import importlib
import io
import logging
import os
import signal
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any

# (module, attribute, value a fresh process has): module-level state of awm_runtime a command may change.
FRESH: tuple[tuple[str, str, Callable[[], Any]], ...] = (
    ("awm_runtime._log", "_decided", lambda: False),
    ("awm_runtime._plugins", "_local", dict),
    ("awm_runtime.models._limits", "_limiters", dict),
    ("awm_runtime.models._limits", "_factory", lambda: None),
    ("awm_runtime.models._local", "_servers", dict),
    ("awm_runtime.models._local", "_workdir", lambda: None),
    ("awm_runtime.models._transport", "_shared", lambda: None),
    ("awm_runtime.models._call_procs", "_pool", lambda: None),
    ("awm_runtime.models._http", "_sessions", dict),
    ("awm_runtime.models._reasoning", "_warned", set),
    ("awm_runtime.episode._checkpoint_store", "_full_roots", set),
    ("awm_runtime.logs._redact", "_KNOWN", dict),
)
SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGCHLD", "SIGPIPE", "SIGXFSZ")
                if hasattr(signal, name))
_PR_GET_DUMPABLE, _PR_SET_DUMPABLE = 3, 4


@dataclasses.dataclass(frozen=True)
class Result:
    """What `subprocess.run(..., capture_output=True, text=True)` would have returned."""

    returncode: int
    stdout: str
    stderr: str
    args: tuple[str, ...] = ()


def entry_point(name: str) -> Callable[[list[str]], int]:
    """The console script of the command `name` ("run", "report", "fork", "export", "view", "worlds", "bench",
    "serve"): `awm_runtime.cli.<name>_main`, the function pyproject's [project.scripts] names, called with
    `sys.argv` set as the script would have it (run_cli puts sys.argv back afterwards)."""
    import awm_runtime.cli

    script = getattr(awm_runtime.cli, f"{name}_main")

    def main(argv: list[str]) -> int:
        sys.argv = [f"awm-{name}", *argv]
        return int(script())

    return main


def run_cli(main: Callable[[list[str]], int] | str, *args: str, env: dict[str, str] | None = None,
            timeout: float | None = None) -> Result:
    """Call `main(list(args))` as its console script would run, capturing its output; see the module docstring.

    `timeout` stands in for subprocess.run's: a call still running after it cannot be killed alone, so the test
    process dumps every thread's stack to its stderr and exits (pytest-xdist reports the worker and the test as
    crashed), rather than hang the suite."""
    if isinstance(main, str):
        main = entry_point(main)
    stderr = os.dup(2)  # the test process's own stderr, for the stacks of a call past its timeout
    try:
        with _fresh_process(env) as (out, err):
            with _deadline(timeout, stderr):
                code = _call(main, [str(a) for a in args])
            sys.stdout.flush()
            sys.stderr.flush()
    finally:
        os.close(stderr)
    return Result(code, out.getvalue(), err.getvalue(), tuple(args))


@contextlib.contextmanager
def _deadline(timeout: float | None, stderr: int) -> Iterator[None]:
    if timeout is None:
        yield
        return
    import faulthandler

    faulthandler.dump_traceback_later(timeout, exit=True, file=stderr)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def _call(main: Callable[[list[str]], int], argv: list[str]) -> int:
    try:
        code: Any = main(argv)
    except SystemExit as exc:
        code = exc.code
    except Exception:  # an uncaught exception: Python prints it and exits 1
        traceback.print_exc()
        return 1
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


class _Captured:
    """The text a redirected descriptor received, read once the call is over."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _fresh_process
        self.text = ""

    def getvalue(self) -> str:
        return self.text

    def finish(self) -> None:
        self.file.seek(0)
        self.text = self.file.read().decode("utf-8", errors="replace")
        self.file.close()


@contextlib.contextmanager
def _fresh_process(env: dict[str, str] | None) -> Iterator[tuple[_Captured, _Captured]]:
    out, err = _Captured(), _Captured()
    with contextlib.ExitStack() as stack:
        stack.callback(err.finish)
        stack.callback(out.finish)
        stack.enter_context(_environment(env))
        stack.enter_context(warnings.catch_warnings())
        stack.enter_context(_process_settings())
        stack.enter_context(_logging())
        stack.enter_context(_module_state())
        stack.enter_context(_descriptors(out, err))
        yield out, err


@contextlib.contextmanager
def _environment(env: dict[str, str] | None) -> Iterator[None]:
    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    os.environ.update(env or {})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        sys.argv = saved_argv


@contextlib.contextmanager
def _process_settings() -> Iterator[None]:
    import resource

    handlers = {sig: signal.getsignal(sig) for sig in SIGNALS}
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    libc = ctypes.CDLL(None, use_errno=True)
    dumpable = libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) if sys.platform.startswith("linux") else -1
    niceness = os.nice(0)
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        with contextlib.suppress(ValueError, OSError):  # lowering a soft limit is always allowed
            resource.setrlimit(resource.RLIMIT_NOFILE, nofile)
        if dumpable >= 0:
            libc.prctl(_PR_SET_DUMPABLE, dumpable, 0, 0, 0)
        if os.nice(0) != niceness:  # cannot be undone without privileges: say so rather than slow later tests
            raise AssertionError(f"the command changed this process's niceness ({niceness} -> {os.nice(0)})")


@contextlib.contextmanager
def _logging() -> Iterator[None]:
    import structlog
    import structlog.contextvars

    configured, config = structlog.is_configured(), structlog.get_config()
    bound = structlog.contextvars.get_contextvars()
    structlog.contextvars.clear_contextvars()
    root = logging.getLogger()
    saved_root = (root.level, list(root.handlers), logging.root.manager.disable)
    structlog.reset_defaults()  # a fresh process: our _log decides where lines go
    try:
        yield
    finally:
        structlog.reset_defaults()
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(**bound)
        if configured:
            structlog.configure(**config)
        root.setLevel(saved_root[0])
        root.handlers[:] = saved_root[1]
        logging.disable(saved_root[2])


@contextlib.contextmanager
def _module_state() -> Iterator[None]:
    saved = []
    for module_name, attr, fresh in FRESH:
        module = importlib.import_module(module_name)
        value = getattr(module, attr)
        if isinstance(value, dict | set):  # emptied in place: whoever imported the object keeps the live one
            saved.append((module, attr, value, value.copy()))
            value.clear()
        else:
            saved.append((module, attr, value, None))
            setattr(module, attr, fresh())
    try:
        yield
    finally:
        left = _leftovers()
        for module, attr, value, contents in saved:
            setattr(module, attr, value)
            if contents is not None:
                value.clear()
                value.update(contents)
        if left:
            raise AssertionError(f"the command left {', '.join(left)} running")


def _leftovers() -> list[str]:
    """Servers and pools a command started and did not stop (killed here, then reported)."""
    from awm_runtime.models import _call_procs, _local

    left = []
    for alias, server in list(_local._servers.items()):
        server.kill_now()
        left.append(f"local model server {alias}")
    if _call_procs._pool is not None:
        for shard in _call_procs._pool.procs:
            with contextlib.suppress(ProcessLookupError):
                shard.proc.kill()
        left.append("the call-process pool")
    return left


@contextlib.contextmanager
def _descriptors(out: _Captured, err: _Captured) -> Iterator[None]:
    streams = (sys.stdout, sys.stderr)
    for stream in streams:
        with contextlib.suppress(Exception):
            stream.flush()
    saved_fds = (os.dup(1), os.dup(2))
    os.dup2(out.file.fileno(), 1)
    os.dup2(err.file.fileno(), 2)
    sys.stdout = io.TextIOWrapper(io.FileIO(os.dup(1), "w"), encoding="utf-8", errors="strict")
    sys.stderr = io.TextIOWrapper(io.FileIO(os.dup(2), "w"), encoding="utf-8", errors="backslashreplace",
                                  line_buffering=True)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.close()
        sys.stdout, sys.stderr = streams
        for fd, saved in zip((1, 2), saved_fds, strict=True):
            os.dup2(saved, fd)
            os.close(saved)


__all__ = ["FRESH", "Result", "entry_point", "run_cli"]
