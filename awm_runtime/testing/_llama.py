"""A toy llama.cpp `llama-server` for token in, token out: /props, /v1/models, /apply-template, /tokenize,
/detokenize and /completion with a token-array prompt, over the ChatML byte engine of testing/_tokens.py.

It answers as its responder would (shown the token prompt read back as a chat), and `tamper` may rewrite
any answer body before it leaves (path, body -> body): how a test plays a server whose token data is
malformed (negative or huge ids, ids that are not integers, no ids for text, missing logprobs).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from awm_runtime.testing._loopback import LoopbackServer, Reply, Responder
from awm_runtime.testing._tokens import IM_END, OFFSET, ChatML

Tamper = Callable[[str, dict[str, Any]], dict[str, Any]]
VOCAB = OFFSET + 256  # the byte engine's ids: specials below OFFSET, then one per byte


class FakeLlamaServer(LoopbackServer):
    """`with FakeLlamaServer(responder=...) as server:` then point a tito alias's api_base at `server.url`."""

    thread_name = "fake-llama"

    def __init__(self, *, responder: Responder | None = None, script: list[Reply] | None = None,
                 n_ctx: int = 1 << 20, tamper: Tamper | None = None, max_lifetime_s: float = 300.0) -> None:
        super().__init__(models=("loop-llama",), script=script, responder=responder, max_lifetime_s=max_lifetime_s)
        self.n_ctx = n_ctx
        self.tamper = tamper
        self.rendered: list[str] = []  # every /apply-template answer, as sent
        self.completions: list[dict[str, Any]] = []  # bodies POSTed to /completion, as received

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    def _out(self, path: str, body: dict[str, Any]) -> Response:
        return JSONResponse(self.tamper(path, body) if self.tamper else body)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.get("/props")
        async def props() -> Response:
            return self._out("/props", {"default_generation_settings": {"n_ctx": self.n_ctx}})

        @app.get("/v1/models")
        async def models() -> Response:
            return self._out("/v1/models", {"object": "list", "data": [
                {"id": m, "object": "model", "meta": {"n_vocab": VOCAB, "n_ctx_train": self.n_ctx}}
                for m in self.models]})

        @app.post("/apply-template")
        async def apply_template(request: Request) -> Response:
            body = await request.json()
            text = ChatML.render(body["messages"], body.get("tools"))
            self.rendered.append(text)
            return self._out("/apply-template", {"prompt": text})

        @app.post("/tokenize")
        async def tokenize(request: Request) -> Response:
            body = await request.json()
            return self._out("/tokenize", {"tokens": ChatML.encode(str(body.get("content", "")))})

        @app.post("/detokenize")
        async def detokenize(request: Request) -> Response:
            body = await request.json()
            return self._out("/detokenize", {"content": ChatML.decode(list(body.get("tokens") or []))})

        @app.post("/completion")
        async def completion(request: Request) -> Response:
            body = await request.json()
            self.completions.append(body)
            prompt = body["prompt"]
            chat = {**body, "messages": ChatML.parse(ChatML.decode(prompt))}
            reply = await asyncio.to_thread(self.next_reply, chat) if self.responder else self.next_reply(chat)
            if reply.status != 200 or reply.body is not None:
                return Response(reply.body or "", status_code=reply.status, media_type="application/json")
            generated = [*ChatML.encode(ChatML.render_assistant(reply.content, reply.tool_calls)), IM_END]
            limit = body.get("n_predict")
            stop = "eos"
            if isinstance(limit, int) and 0 <= limit < len(generated):
                generated, stop = generated[:limit], "limit"
            out: dict[str, Any] = {"content": ChatML.decode([t for t in generated if t != IM_END]),
                                   "tokens": generated, "stop_type": stop, "tokens_evaluated": len(prompt)}
            if body.get("n_probs"):
                out["completion_probabilities"] = [{"id": t, "logprob": -math.log1p(t % 7)} for t in generated]
            return self._out("/completion", out)

        return app
