"""`python -m awm_runtime.testing`: the benchmarks' model server, in its own process (testing/_lean.py)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal

from awm_runtime._gc import tuned_collector
from awm_runtime.isolation import die_with_parent
from awm_runtime.testing._lean import LeanServer, serve
from awm_runtime.testing._server import sim_responder, teach_builtin


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m awm_runtime.testing")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--key", default=None)
    p.add_argument("--latency", type=float, default=0.0, help="seconds from a request's arrival to its reply")
    p.add_argument("--mode", choices=("echo", "sim-oracle", "sim-novice"), default="echo")
    p.add_argument("--lifetime", type=float, default=900.0, help="stop by itself after this many seconds")
    p.add_argument("--parent", type=int, default=0, help="stop when this process (the benchmark) ends")
    args = p.parse_args()
    if args.parent:
        die_with_parent(args.parent)
    responder = None
    if args.mode != "echo":
        teach_builtin()
        responder = sim_responder(args.mode.removeprefix("sim-"))
    server = LeanServer(latency_s=args.latency, responder=responder, key=args.key,
                        models=("fake-model", "sim-oracle"))

    async def run() -> None:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError), tuned_collector():
            await serve(server, port=args.port, lifetime_s=args.lifetime, announce=lambda url: print(url, flush=True))

    asyncio.run(run())


if __name__ == "__main__":
    main()
