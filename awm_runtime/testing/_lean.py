"""The benchmarks' model server: OpenAI chat completions on aiohttp, for `python -m awm_runtime.testing`.

It stands in for a model server that runs on other hardware, so its own CPU on the benchmark's
cores is an artefact to keep small. FakeOpenAI (FastAPI on uvicorn's pure-Python h11) spent
~2.5 ms of CPU a call at 1,000 episodes in flight, more than the runtime it measured; aiohttp
parses HTTP in C. It answers like FakeOpenAI (same completions, same token counts, same key
check), `latency` seconds after a request arrives, and reports how late its replies left past
that (GET /stats), so a benchmark can show the fixture's own share of each call.
"""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Any

import orjson

from awm_runtime.testing._server import Reply, Responder, completion_body


class LeanServer:
    def __init__(self, *, latency_s: float, responder: Responder | None, key: str | None,
                 models: tuple[str, ...]) -> None:
        self.latency_s, self.responder, self.key, self.models = latency_s, responder, key, models
        self.late_ms: collections.deque[float] = collections.deque(maxlen=100_000)
        # Wall-clock times (time.time) of the first request and the last reply since the last reset: a
        # batch's makespan, as the model server sees it.
        self.first_request: float | None = None
        self.last_reply: float | None = None

    def reset(self) -> None:
        """Forget what came before (a benchmark's preflight call), so the stats cover the run alone."""
        self.late_ms.clear()
        self.first_request = self.last_reply = None

    def lateness(self) -> dict[str, Any]:
        late = sorted(self.late_ms)
        times = {"first_request_unix": self.first_request, "last_reply_unix": self.last_reply}
        if not late:
            return {"replies": 0, **times}
        return {"replies": len(late), "late_ms_p50": round(late[len(late) // 2], 2),
                "late_ms_p99": round(late[int(0.99 * (len(late) - 1))], 2), "late_ms_max": round(late[-1], 2),
                **times}

    def app(self) -> Any:
        from aiohttp import web

        def denied(request: web.Request) -> web.Response | None:
            if self.key is None or request.headers.get("Authorization") == f"Bearer {self.key}":
                return None
            return _json({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                    "code": "invalid_api_key"}}, 401)

        async def chat(request: web.Request) -> web.Response:
            arrived = time.monotonic()
            if self.first_request is None:
                self.first_request = time.time()
            if (refusal := denied(request)) is not None:
                return refusal
            body = orjson.loads(await request.read())
            reply = self.responder(body) if self.responder else Reply(content="ok")
            # Answered on arrival and held as bytes while it waits: a parsed request kept alive for the
            # latency would be walked by every garbage collection meanwhile.
            response = _json(completion_body(body, reply), reply.status)
            del body, reply
            if self.latency_s:
                await asyncio.sleep(max(0.0, arrived + self.latency_s - time.monotonic()))
                self.late_ms.append(1000 * (time.monotonic() - arrived - self.latency_s))
            self.last_reply = time.time()
            return response

        async def models(request: web.Request) -> web.Response:
            return denied(request) or _json(
                {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "awm"} for m in self.models]})

        async def stats(request: web.Request) -> web.Response:
            return _json(self.lateness())

        async def reset(request: web.Request) -> web.Response:
            self.reset()
            return _json({"reset": True})

        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_post("/v1/chat/completions", chat)
        app.router.add_get("/v1/models", models)
        app.router.add_get("/stats", stats)
        app.router.add_post("/stats/reset", reset)
        return app


def _json(data: Any, status: int = 200) -> Any:
    from aiohttp import web

    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


async def serve(server: LeanServer, *, port: int, lifetime_s: float, announce: Any) -> None:
    """Serve on 127.0.0.1:`port` (0: any) until `lifetime_s` pass or the task is cancelled."""
    from aiohttp import web

    from awm_runtime._sockets import bound_tcp_socket

    sock = bound_tcp_socket("127.0.0.1", port)
    runner = web.AppRunner(server.app(), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.SockSite(runner, sock, backlog=4096, shutdown_timeout=2)
    await site.start()
    announce(f"http://127.0.0.1:{sock.getsockname()[1]}/v1")
    try:
        await asyncio.sleep(lifetime_s)
    finally:
        await runner.cleanup()
