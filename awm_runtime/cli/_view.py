"""awm-view: a local web page to browse a run directory's episodes and transcripts, live while it runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from awm_runtime._errors import ConfigError
from awm_runtime.cli._common import Parser, guarded

DEFAULT_PORT = 8765


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="awm-view", description="Browse a run directory in the browser: an episode "
                                "table to filter and sort, each episode's transcript by source, live while the run "
                                "is still writing. Reads the run by streaming; binds to 127.0.0.1 unless told.")
    p.add_argument("run", type=Path, metavar="RUN", help="a run directory (the --out of awm-run)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; anything else shows your transcripts to the network)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 = any free port)")
    p.add_argument("--exit-after", type=float, metavar="S", dest="exit_after_s",
                   help="stop serving after S seconds (default: until Ctrl-C)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def go() -> int:
        from awm_runtime.logs import EPISODES, MANIFEST
        from awm_runtime.view import is_loopback, serve

        run: Path = args.run
        if not run.is_dir():
            raise ConfigError(f"{run} is not a directory: pass the --out directory of an awm-run")
        if not (run / EPISODES).is_file() and not (run / MANIFEST).is_file():
            raise ConfigError(f"{run} is not a run directory: it has no {EPISODES} or {MANIFEST}")
        if not 0 <= args.port <= 65535:
            raise ConfigError(f"--port must be 0..65535, got {args.port}")
        if args.exit_after_s is not None and args.exit_after_s <= 0:
            raise ConfigError("--exit-after must be a positive number of seconds")
        if not is_loopback(args.host):
            print(f"awm-view: warning: listening on {args.host}: anyone who can reach it can read these transcripts",
                  file=sys.stderr)

        def ready(url: str) -> None:
            print(f"awm-view: serving {run} at {url} (Ctrl-C to stop)", flush=True)

        serve(run, host=args.host, port=args.port, exit_after_s=args.exit_after_s, on_ready=ready)
        return 0

    return guarded("awm-view", go)
