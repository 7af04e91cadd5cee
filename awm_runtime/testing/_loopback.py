"""The core every scripted model server shares: the script, the request log, the key, faults, the uvicorn thread.

A wire server (OpenAI, Anthropic Messages, Gemini generateContent) subclasses `LoopbackServer`, adds its
routes, turns each request into the OpenAI-shaped chat view its responders read, and renders the `Reply`
in its own wire: the same script, responders (`sim_responder`, `storm`) and faults serve every wire.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

from awm_runtime._sockets import bound_tcp_socket

Responder = Callable[[dict[str, Any]], "Reply"]


@dataclass(slots=True)
class Reply:
    """One scripted answer: a message with optional tool calls, or a fault (any status, Retry-After, a raw
    body, latency, a hang). `tool_calls` are OpenAI-shaped; each wire server renders them in its own."""

    content: str | None = "ok"
    tool_calls: list[dict[str, Any]] | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None  # raw response body, e.g. malformed JSON; overrides everything else
    delay_s: float = 0.0
    hang: bool = False
    usage: dict[str, int] | None = None
    extra_choice: dict[str, Any] = field(default_factory=dict)  # e.g. logprobs
    extra_message: dict[str, Any] = field(default_factory=dict)  # e.g. reasoning_content
    fault: str | None = None  # an error message each wire words as its provider does (set by Reply.error)

    @classmethod
    def error(cls, status: int, message: str = "scripted failure", **headers: str) -> Reply:
        """A failed answer: the OpenAI server sends `body`; the other wires word `message` their own way."""
        import json

        return cls(content=None, status=status, headers={k.replace("_", "-"): v for k, v in headers.items()},
                   body=json.dumps({"error": {"message": message, "type": "scripted", "code": status}}),
                   fault=message)


class LoopbackServer:
    """A model server on 127.0.0.1 in a thread of this process; `with Server(...) as s:` then use `s.url`.

    It records every request, checks the key, and stops by itself after `max_lifetime_s`, so a
    forgotten server never outlives its test."""

    thread_name = "loopback-model"

    def __init__(self, *, key: str | None = None, models: tuple[str, ...] = ("fake-model",),
                 script: list[Reply] | None = None, responder: Responder | None = None,
                 default: Reply | None = None, max_lifetime_s: float = 300.0, port: int = 0) -> None:
        self.key = key
        self.models = models
        self.script: deque[Reply] = deque(script or [])
        self.responder = responder
        self.default = default or Reply()
        self.max_lifetime_s = max_lifetime_s
        self.requests: list[dict[str, Any]] = []
        self._port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        return self._port

    def next_reply(self, request: dict[str, Any], view: dict[str, Any] | None = None) -> Reply:
        """Record `request`, then answer from the script, else the responder (given `view`, the request's
        OpenAI-shaped view, when the wire is another), else the default."""
        with self._lock:
            self.requests.append(request)
            if self.script:
                return self.script.popleft()
        return self.responder(request if view is None else view) if self.responder else self.default

    async def scripted(self, request: dict[str, Any], arrived: float, view: dict[str, Any] | None = None) -> Reply:
        """The reply to one request, after its hang or latency: the reply leaves `delay_s` after the request
        arrived, as a model server's would."""
        if self.responder:
            reply = await asyncio.to_thread(self.next_reply, request, view)
        else:
            reply = self.next_reply(request, view)
        if reply.hang:
            await asyncio.sleep(self.max_lifetime_s)
        if reply.delay_s:
            await asyncio.sleep(max(0.0, arrived + reply.delay_s - time.monotonic()))
        return reply

    def app(self) -> Any:
        """The ASGI app serving this wire."""
        raise NotImplementedError

    def start(self) -> Self:
        import uvicorn

        sock = bound_tcp_socket("127.0.0.1", self._port)
        self._port = sock.getsockname()[1]
        config = uvicorn.Config(self.app(), log_level="warning", access_log=False, lifespan="off",
                                timeout_keep_alive=30, backlog=4096, timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        started = threading.Event()

        def serve() -> None:
            async def main() -> None:
                watchdog = asyncio.get_running_loop().call_later(self.max_lifetime_s, self._expire)
                started.set()
                try:
                    await self._server.serve(sockets=[sock])
                finally:
                    watchdog.cancel()
            asyncio.run(main())

        self._thread = threading.Thread(target=serve, name=f"{self.thread_name}-{self._port}", daemon=True)
        self._thread.start()
        started.wait(10)
        deadline = time.monotonic() + 10
        while not getattr(self._server, "started", False) and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def _expire(self) -> None:
        self._server.should_exit = True

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
