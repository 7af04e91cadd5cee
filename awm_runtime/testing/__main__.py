"""`python -m awm_runtime.testing`: run the fake OpenAI server in its own process (benchmarks)."""

from __future__ import annotations

import argparse
import signal
import threading

from awm_runtime.testing._server import FakeOpenAI, Reply, sim_responder, teach_builtin


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m awm_runtime.testing")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--key", default=None)
    p.add_argument("--latency", type=float, default=0.0, help="seconds before every reply")
    p.add_argument("--mode", choices=("echo", "sim-oracle", "sim-novice"), default="echo")
    p.add_argument("--lifetime", type=float, default=900.0, help="stop by itself after this many seconds")
    args = p.parse_args()
    responder = None
    if args.mode != "echo":
        teach_builtin()
        inner = sim_responder(args.mode.removeprefix("sim-"))

        def responder(req):  # type: ignore[no-untyped-def]
            reply = inner(req)
            reply.delay_s = args.latency
            return reply

    server = FakeOpenAI(key=args.key, responder=responder, default=Reply(content="ok", delay_s=args.latency),
                        max_lifetime_s=args.lifetime, port=args.port, models=("fake-model", "sim-oracle"))
    server.start()
    print(server.url, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait(args.lifetime)
    server.stop()


if __name__ == "__main__":
    main()
