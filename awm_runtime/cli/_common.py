"""Shared CLI plumbing: bad input is one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

from awm_runtime._errors import ConfigError

EXIT_CONFIG = 2
EXIT_INTERRUPTED = 130
EXIT_UNRECORDED = 3  # the run finished, but planned episodes have no record (summary.json names them)


def fail(message: str, prog: str) -> NoReturn:
    from awm_runtime._printable import printable

    for line in message.splitlines() or [message]:
        print(f"{prog}: error: {printable(line, one_line=True)}", file=sys.stderr)
    raise SystemExit(EXIT_CONFIG)


def disk_mib(text: str) -> int:
    """`--world-disk-mib`: a scenario's disk quota in MiB, at least MIN_DISK_MIB."""
    from awm_runtime.worlds import MIN_DISK_MIB

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of MiB") from None
    if value < MIN_DISK_MIB:
        raise argparse.ArgumentTypeError(f"a scenario needs at least {MIN_DISK_MIB} MiB, got {value}")
    return value


DISK_HELP = ("MiB all of one scenario's files may take together: its build, imports and open episodes' DBs "
             "(default: sized for its template and the episodes of it in flight, at least 256; set: at least 16). "
             "A scenario past it fails its own episodes as world_error")


class Parser(argparse.ArgumentParser):
    """argparse with the one-line usage error the README promises: `PROG: error: WHAT (see PROG --help)`."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_CONFIG)


def guarded(prog: str, main: Callable[[], int]) -> int:
    """Run a CLI command: logs to stderr (stdout may be JSON), bad input as one line and exit 2."""
    from awm_runtime._log import console_logging

    console_logging()
    from awm_runtime.isolation import mark_private

    mark_private()  # this process may hold keys: its memory and /proc/<pid>/environ are refused to others
    try:
        return main()
    except ConfigError as exc:
        fail(str(exc), prog)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
