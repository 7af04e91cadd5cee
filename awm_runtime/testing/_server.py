"""A scriptable OpenAI-compatible server on 127.0.0.1, for wire tests and benchmarks.

Replies come from a script (consumed in order), a responder function, or a default. Each reply
can add latency, fail with any status (and Retry-After), return a malformed body, or hang.
The server records every request, checks the bearer key, and stops by itself after
`max_lifetime_s` so a forgotten server never outlives its test.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from typing import Any, Protocol

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from awm_runtime.testing._loopback import LoopbackServer, Reply, Responder


class TokenEngine(Protocol):
    """A toy serving engine's tokenizer and template, for vLLM's token-in, token-out endpoints
    (`testing._tokens.ChatMLEngine`)."""

    def tokenize(self, body: dict[str, Any], max_model_len: int) -> dict[str, Any]:
        """vLLM's POST /tokenize answer (chat messages or a prompt string)."""
        ...

    def detokenize(self, ids: list[int]) -> str:
        """vLLM's POST /detokenize answer: the text of `ids`."""
        ...

    def read_prompt(self, ids: list[int]) -> list[dict[str, Any]]:
        """A token prompt read back as the chat it renders (what a responder is shown)."""
        ...

    def completion(self, body: dict[str, Any], reply: Reply, prompt: list[int]) -> dict[str, Any]:
        """vLLM's /v1/completions answer to a token-id prompt."""
        ...


def prompt_tokens(request: dict[str, Any]) -> int:
    """A stand-in tokenizer: 4 characters a token. Like a real server's, it counts the tools too (the
    preflight's native probe compares prompts with and without them)."""
    return (sum(len(str(m.get("content") or "")) for m in request.get("messages", []))
            + (_tools_chars(request["tools"]) if request.get("tools") else 0)) // 4


_TOOLS_CHARS: dict[bytes, int] = {}


def _tools_chars(tools: Any) -> int:
    """len(json.dumps(tools)), remembered per distinct tool set: a run sends the same few sets
    thousands of times, and json.dumps of 40 KB cost more than the rest of a reply."""
    key = orjson.dumps(tools)
    if (n := _TOOLS_CHARS.get(key)) is None:
        if len(_TOOLS_CHARS) >= 256:
            _TOOLS_CHARS.clear()
        n = _TOOLS_CHARS[key] = len(json.dumps(tools))
    return n


async def _json_body(request: Request) -> Any:
    """The request's JSON body (orjson: a 40 KB body of tools parses ~5x faster than with json)."""
    raw = await request.body()
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)  # what orjson refuses and json takes (NaN), or json's own error


def completion_body(request: dict[str, Any], reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, **reply.extra_message}
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    prompt = prompt_tokens(request)
    completion = (len(reply.content or "") + len(json.dumps(reply.tool_calls or []))) // 4
    # A reasoning reply (vLLM's reasoning parser, OpenAI's reasoning models): its reasoning is generated tokens,
    # inside completion_tokens, and told apart in completion_tokens_details.reasoning_tokens.
    thought = reply.extra_message.get("reasoning_content") or reply.extra_message.get("reasoning")
    reasoning = max(1, len(str(thought)) // 4) if thought else None
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion + (reasoning or 0),
                             "total_tokens": prompt + completion + (reasoning or 0)}
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion", "created": int(time.time()),
        "model": request.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                     **reply.extra_choice}],
        "usage": reply.usage or usage,
    }


class FakeOpenAI(LoopbackServer):
    """`with FakeOpenAI(key="k1") as server:` then point a model's api_base at `server.url`."""

    thread_name = "fake-openai"

    def __init__(self, *, key: str | None = None, models: tuple[str, ...] = ("fake-model",),
                 script: list[Reply] | None = None, responder: Responder | None = None,
                 default: Reply | None = None, max_lifetime_s: float = 300.0, port: int = 0,
                 leak_key: bool = False, max_model_len: int | None = None,
                 token_engine: TokenEngine | None = None) -> None:
        super().__init__(key=key, models=models, script=script, responder=responder, default=default,
                         max_lifetime_s=max_lifetime_s, port=port)
        self.leak_key = leak_key  # answer a wrong key with the key itself, as careless providers do
        self.max_model_len = max_model_len  # set: answer like vLLM (/v1/models max_model_len, POST /tokenize)
        self.in_flight = 0  # chat completions being answered right now
        self.max_in_flight = 0  # the most ever answered at once (concurrency limits are checked against it)
        self.tokenized: list[dict[str, Any]] = []  # bodies POSTed to /tokenize
        # Token in, token out like vLLM (e.g. testing/_tokens.py's ChatMLEngine): /tokenize answers with real
        # ids, /detokenize with text, /v1/completions takes token-id prompts and returns `token_ids`.
        self.token_engine = token_engine
        if token_engine is not None and not max_model_len:
            self.max_model_len = 32768
        self.completions: list[dict[str, Any]] = []  # bodies POSTed to /v1/completions, as received

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    def app(self) -> FastAPI:
        app = FastAPI()

        def unauthorized(request: Request) -> Response | None:
            if self.key is None or request.headers.get("authorization") == f"Bearer {self.key}":
                return None
            shown = request.headers.get("authorization", "").removeprefix("Bearer ") if self.leak_key else ""
            return JSONResponse({"error": {"message": f"Incorrect API key provided: {shown}".strip(),
                                           "type": "invalid_request_error", "code": "invalid_api_key"}},
                                status_code=401)

        @app.get("/v1/models")
        async def models(request: Request) -> Response:
            window = {"max_model_len": self.max_model_len} if self.max_model_len else {}
            return unauthorized(request) or JSONResponse(
                {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "awm", **window}
                                            for m in self.models]})

        @app.post("/tokenize")
        async def tokenize(request: Request) -> Response:
            if not self.max_model_len:
                return JSONResponse({"detail": "Not Found"}, status_code=404)
            body = await _json_body(request)
            self.tokenized.append(body)
            if self.token_engine is not None:
                return unauthorized(request) or JSONResponse(self.token_engine.tokenize(body, self.max_model_len or 0))
            count = prompt_tokens(body) if "messages" in body else len(str(body.get("prompt", ""))) // 4
            return unauthorized(request) or JSONResponse(
                {"count": count, "max_model_len": self.max_model_len, "tokens": list(range(count))})

        @app.post("/v1/completions")
        async def completions(request: Request) -> Response:
            denied = unauthorized(request)
            body = await _json_body(request)
            engine = self.token_engine
            if denied or engine is None:
                return denied or JSONResponse({"detail": "Not Found"}, status_code=404)
            self.completions.append(body)
            prompt = body.get("prompt")
            if not isinstance(prompt, list) or not all(isinstance(t, int) for t in prompt):
                return JSONResponse({"error": {"message": "prompt: expected token ids", "code": 400}}, status_code=400)
            if self.max_model_len and len(prompt) + int(body.get("max_tokens") or 0) > self.max_model_len:
                return JSONResponse({"error": {"message": f"This model's maximum context length is "
                                               f"{self.max_model_len} tokens.", "code": 400}}, status_code=400)
            # the responder sees the prompt as the chat it renders, like any chat request
            chat = {**body, "messages": engine.read_prompt(prompt)}
            reply = await asyncio.to_thread(self.next_reply, chat) if self.responder else self.next_reply(chat)
            if reply.status != 200 or reply.body is not None:
                return Response(reply.body or "", status_code=reply.status, headers=reply.headers,
                                media_type="application/json")
            return JSONResponse(engine.completion(body, reply, prompt))

        @app.post("/detokenize")
        async def detokenize(request: Request) -> Response:
            body = await _json_body(request)
            if self.token_engine is None:
                return JSONResponse({"detail": "Not Found"}, status_code=404)
            text = self.token_engine.detokenize(body.get("tokens") or [])
            return unauthorized(request) or JSONResponse({"prompt": text})

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Response:
            arrived = time.monotonic()
            denied = unauthorized(request)
            body = await _json_body(request)
            body["_auth"] = request.headers.get("authorization", "")
            if denied:
                self.requests.append(body)
                return denied
            with self._lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                return await self._answer(body, arrived)
            finally:
                with self._lock:
                    self.in_flight -= 1

        return app

    async def _answer(self, body: dict[str, Any], arrived: float) -> Response:
        """The reply leaves `delay_s` after the request arrived: the server's own parsing and
        responding are part of the latency, as a model server's are."""
        reply = await self.scripted(body, arrived)
        if reply.body is not None:
            return Response(reply.body, status_code=reply.status, headers=reply.headers,
                            media_type="application/json")
        return JSONResponse(completion_body(body, reply), status_code=reply.status, headers=reply.headers)


def sim_responder(behaviour: str = "oracle", knobs: dict[str, Any] | None = None) -> Responder:
    """Answer like the simulated model `sim/<behaviour>`, over real HTTP (needs `teach_builtin()`)."""
    from awm_runtime.models.sim import simulate

    def respond(request: dict[str, Any]) -> Reply:
        params = {k: v for k, v in request.items() if k not in ("messages", "model")}
        if knobs:
            params["sim"] = knobs
        message = simulate(f"sim/{behaviour}", request["messages"], params)
        return Reply(content=message.get("content"), tool_calls=message.get("tool_calls"))

    return respond


def storm(inner: Responder | None = None, *, rate_limited: float = 0.3, server_errors: float = 0.15,
          retry_after: str = "0.05", seed: int = 0, statuses: tuple[int, ...] = (500, 502, 503)) -> Responder:
    """Fail a seeded share of requests with 429 (with Retry-After) or a 5xx from `statuses` (Anthropic's
    overload is 529); answer the rest with `inner`. Each wire words the faults as its provider does."""
    rng = random.Random(seed)

    def respond(request: dict[str, Any]) -> Reply:
        roll = rng.random()
        if roll < rate_limited:
            return Reply.error(429, "rate limit reached, slow down", retry_after=retry_after)
        if roll < rate_limited + server_errors:
            return Reply.error(rng.choice(statuses), "upstream overloaded")
        return inner(request) if inner else Reply()

    return respond


def teach_builtin() -> int:
    """Load the built-in worlds' reference solutions into the simulations of this process."""
    from awm_runtime._build import BuildContext
    from awm_runtime.models import load_registry
    from awm_runtime.worlds import load_worlds

    world = load_worlds("builtin")
    ctx = BuildContext(registry=load_registry(), world=world)
    ctx.teach_simulations()
    return len(world.tasks())
