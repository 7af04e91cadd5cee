"""awm-serve: our world engine behind OpenEnv's WebSocket protocol, and optionally MCP."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from awm_runtime._errors import ConfigError
from awm_runtime.cli._common import DISK_HELP, Parser, disk_mib, guarded

SESSIONS_ROOT = "awm-serve-sessions"  # the default --sessions-dir is a fresh folder under it, in the working dir
DESCRIPTION = """Serve AWM worlds to OpenEnv clients (AWMEnv, TRL) at ws://HOST:PORT/ws: one isolated episode per
connection, with OpenEnv's frames, observations and hidden tools (verify, done, __list_scenarios__).

--mcp also serves each scenario as an MCP server (streamable HTTP) at http://HOST:PORT/mcp/<scenario>:
every MCP session is a fresh episode. --stdio SCENARIO serves one episode over stdin/stdout instead.

When it listens, the server prints its base URL on stdout (one line) and logs on stderr."""


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value
    return parse


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="awm-serve", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    a = p.add_argument
    a("--worlds", default="builtin", metavar="builtin|DIR", help="built-in worlds, or an AWM-format directory")
    a("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    a("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    a("--mcp", action="store_true", help="also serve MCP (streamable HTTP) at /mcp/<scenario>")
    a("--allow-origin", action="append", default=[], metavar="ORIGIN",
      help="also answer browser pages from ORIGIN (e.g. http://localhost:3000; repeatable; '*' = any page and "
           "any Host). By default only the server's own origin is answered, and only loopback names or IPs as Host")
    a("--stdio", metavar="SCENARIO", help="serve one episode of SCENARIO as an MCP server on stdin/stdout")
    a("--max-sessions", type=_positive(int), default=10_000, metavar="N",
      help="sessions held at once; past it a new socket gets CAPACITY_REACHED (default 10000)")
    a("--idle-timeout", type=float, default=1800.0, metavar="S",
      help="close a session that sent nothing for S seconds, 0 = never (default 1800)")
    a("--preload", action="store_true", help="build every scenario before listening (else on first use)")
    keep = p.add_mutually_exclusive_group()
    keep.add_argument("--sessions-dir", type=Path, metavar="DIR",
                      help="where `done` writes each episode's trajectory (and, with keep_session, its DBs); "
                           f"default {SESSIONS_ROOT}/<timestamp>-<id>, named when the server starts")
    keep.add_argument("--no-trajectories", action="store_true",
                      help="write nothing: `done` then answers trajectory_path null")
    a("--judge", metavar="ALIAS", help="model alias that decides SQL-mode verify (default: none: judge_error)")
    a("--config", type=Path, metavar="awm.toml", help="model aliases (for --judge)")
    a("--foreign-keys", action="store_true", help="enforce PRAGMA foreign_keys in world DBs")
    a("--tool-timeout", type=_positive(float), default=30.0, metavar="S", help="seconds per tool call (default 30)")
    a("--world-workers", type=int, default=0, metavar="N", help="world worker processes (default: one per core)")
    a("--world-disk-mib", type=disk_mib, metavar="MIB", help=DISK_HELP)
    a("--ws-ping-interval", type=_positive(float), default=20.0, metavar="S",
      help="ping every socket this often; one that does not answer within --ws-ping-timeout is closed (default 20)")
    a("--ws-ping-timeout", type=_positive(float), default=20.0, metavar="S", help="(default 20)")
    a("--max-lifetime", type=_positive(float), metavar="S", help="stop after S seconds (for scripts and tests)")
    a("--unsafe-no-sandbox", action="store_true",
      help="run world and verifier code unconfined (only where the OS cannot confine it; it can then reach "
           "your files and network)")
    return p


KEEP_ALL = 1 << 30  # keep_idle_scenarios for a server: never evict


def sessions_dir(args: argparse.Namespace) -> Path | None:
    """Where `done` writes trajectories: --sessions-dir, else a fresh folder under SESSIONS_ROOT (as OpenEnv's
    `done` always carries a trajectory_path); None with --no-trajectories or --stdio (an MCP episode has no
    `done`). The folder is made by the first `done`, so a server that never ends an episode leaves nothing."""
    if args.no_trajectories or args.stdio:
        return None
    if args.sessions_dir is not None:
        where = args.sessions_dir
    else:
        import uuid
        from datetime import UTC, datetime

        where = Path(SESSIONS_ROOT) / f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    where = where.absolute()
    existing = next(p for p in (where, *where.parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"--sessions-dir {where}: cannot write under {existing}; choose another "
                          "--sessions-dir, or --no-trajectories")
    return where


async def _build(args: argparse.Namespace) -> Any:
    from awm_runtime.isolation import require
    from awm_runtime.serve import ServeOptions, SessionHub
    from awm_runtime.worlds import WorldOptions, load_local_worlds, normalize_scenario, resolve_worlds_dir

    root = resolve_worlds_dir(args.worlds)
    if not root.is_dir():
        raise ConfigError(f"--worlds {args.worlds}: no such directory")
    containment = require(args.unsafe_no_sandbox)  # before any dataset code can run
    # A server keeps every scenario it has built (a run evicts idle ones, issue 18): clients come back to any
    # of them at any time, and --preload would be undone. Its world workers stay bounded by the pool's LRU.
    world = load_local_worlds(args.worlds, options=WorldOptions(
        foreign_keys=args.foreign_keys, workers=args.world_workers, tool_timeout_s=args.tool_timeout,
        unsafe_no_sandbox=args.unsafe_no_sandbox, keep_idle_scenarios=KEEP_ALL, world_disk_mib=args.world_disk_mib,
        in_flight=args.max_sessions))  # a session is an episode: any number of them may share one scenario
    if not any(sc.runnable for sc in world.dataset.scenarios.values()):
        raise ConfigError(f"--worlds {args.worlds}: no runnable scenario")
    if args.stdio and world.dataset.scenarios.get(normalize_scenario(args.stdio)) is None:
        raise ConfigError(f"--stdio {args.stdio}: no such scenario in {args.worlds}")
    judge = None
    if args.judge:
        from awm_runtime.cli._worlds import _judge

        judge = await _judge(args)
    print(f"awm-serve: containment: {containment.statement}", file=sys.stderr, flush=True)
    kept = sessions_dir(args)
    if kept is not None:
        print(f"awm-serve: trajectories: each done writes one under {kept} (--sessions-dir DIR to choose, "
              "--no-trajectories to turn off)", file=sys.stderr, flush=True)
    options = ServeOptions(max_sessions=args.max_sessions, idle_timeout_s=args.idle_timeout or None,
                           sessions_dir=kept)
    hub = SessionHub(world, options, judge=judge)
    if args.preload:
        for sid, sc in world.dataset.scenarios.items():
            if sc.runnable:
                try:
                    await world.prepare(sid)
                except Exception as exc:  # a scenario that cannot load answers reset_error; the rest serve
                    print(f"awm-serve: scenario {sid} cannot load: {exc}", file=sys.stderr)
    return hub


async def _main(args: argparse.Namespace) -> int:
    from awm_runtime.serve import Listen, create_app, serve, serve_stdio

    hub = await _build(args)
    try:
        if args.stdio:
            await serve_stdio(hub, args.stdio)
            return 0

        def ready(url: str) -> None:
            print(url, flush=True)
            where = f"OpenEnv {url.replace('http', 'ws', 1)}/ws" + (f", MCP {url}/mcp/<scenario>" if args.mcp else "")
            print(f"awm-serve: serving {args.worlds} ({where})", file=sys.stderr, flush=True)

        listen = Listen(host=args.host, port=args.port, ws_ping_interval_s=args.ws_ping_interval,
                        ws_ping_timeout_s=args.ws_ping_timeout, max_lifetime_s=args.max_lifetime)
        await serve(create_app(hub, mcp=args.mcp, allow_origins=tuple(args.allow_origin)), listen, ready)
        return 0
    finally:
        await hub.world.aclose()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.stdio and args.mcp:
        parser().error("--stdio serves one scenario on stdin/stdout; --mcp is for the HTTP server")
    from awm_runtime.serve import normalize_origin

    for origin in args.allow_origin:
        try:
            normalize_origin(origin)
        except ValueError as exc:
            parser().error(f"--allow-origin: {exc}")
    return guarded("awm-serve", lambda: asyncio.run(_main(args)))
