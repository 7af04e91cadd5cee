"""A scriptable server speaking Anthropic's Messages API (`POST /v1/messages`) on 127.0.0.1.

The shapes follow Anthropic's API reference: `x-api-key` and `anthropic-version` headers; a request's
`system`, `messages` of text / `tool_use` / `tool_result` blocks and `tools` with `input_schema`; a reply
`{"type": "message", "content": [...], "stop_reason", "usage": {"input_tokens", "output_tokens"}}`; errors
`{"type": "error", "error": {"type", "message"}, "request_id"}` with the documented status of each type
(429 `rate_limit_error`, 500 `api_error`, 529 `overloaded_error`, 400 `invalid_request_error` ...).
Responders read the request as an OpenAI-shaped chat view, so the scripts of the OpenAI server serve here too.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from awm_runtime.testing._loopback import LoopbackServer, Reply
from awm_runtime.testing._server import _json_body

# The documented error type of each status (Anthropic: "Errors"); others are invalid_request_error (4xx) or
# api_error (5xx).
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
               403: "permission_error", 404: "not_found_error", 409: "conflict_error", 413: "request_too_large",
               429: "rate_limit_error", 500: "api_error", 504: "timeout_error", 529: "overloaded_error"}


def error_body(status: int, message: str, error_type: str | None = None) -> str:
    """An Anthropic error body for `status`."""
    kind = error_type or ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return json.dumps({"type": "error", "error": {"type": kind, "message": message},
                       "request_id": f"req_{uuid.uuid4().hex[:24]}"})


def fault(status: int, message: str, error_type: str | None = None, **headers: str) -> Reply:
    """A failed answer worded as Anthropic does (`retry_after="2"` adds a Retry-After header)."""
    return Reply(content=None, status=status, body=error_body(status, message, error_type),
                 headers={k.replace("_", "-"): v for k, v in headers.items()})


def overloaded() -> Reply:
    """HTTP 529 `overloaded_error`: the API is busy for everyone (retryable)."""
    return fault(529, "Overloaded")


def rate_limited(retry_after: str = "0.05") -> Reply:
    """HTTP 429 `rate_limit_error` with a Retry-After header."""
    return fault(429, "This request would exceed the rate limit for your organization of 50 requests per minute. "
                      "For details, refer to: https://docs.claude.com/en/api/rate-limits.", retry_after=retry_after)


def prompt_too_long(tokens: int = 208_310, limit: int = 200_000) -> Reply:
    """HTTP 400 `invalid_request_error`: the request does not fit the model's context window."""
    return fault(400, f"prompt is too long: {tokens} tokens > {limit} maximum")


_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
# Anthropic's words (API answers as users report them, e.g. opencode #3077), `{i}` the message's index.
MISSING_THINKING = ("messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. "
                    "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
                    "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include "
                    "thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please "
                    f"consult our documentation at {_DOCS}")
THINKING_WHILE_DISABLED = ("messages.{i}.content.{j}: When thinking is disabled, an `assistant` message in the final "
                           "position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your "
                           "request.")
BAD_SIGNATURE = "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"


def thinking_enabled(body: dict[str, Any]) -> bool:
    """Whether a Messages request turns extended thinking on (`thinking: {type: enabled | adaptive}`)."""
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


class Signer:
    """Signs the thinking blocks a server returns and checks those sent back: unchanged text, unchanged signature,
    as Anthropic's API does (the signature covers the thinking; a block it did not sign is refused)."""

    def __init__(self) -> None:
        self._key = uuid.uuid4().bytes

    def sign(self, text: str) -> str:
        return base64.b64encode(hmac.new(self._key, text.encode(), hashlib.sha256).digest()).decode()

    def valid(self, block: dict[str, Any]) -> bool:
        if block.get("type") == "redacted_thinking":
            data = str(block.get("data") or "")
            payload, _, signature = data.rpartition(".")
            return bool(payload) and hmac.compare_digest(self.sign(payload), signature)
        return hmac.compare_digest(self.sign(str(block.get("thinking") or "")), str(block.get("signature") or ""))

    def redacted(self, text: str) -> dict[str, Any]:
        payload = base64.b64encode(text.encode()).decode()
        return {"type": "redacted_thinking", "data": f"{payload}.{self.sign(payload)}"}


def thinking_error(body: dict[str, Any], signer: Signer) -> str | None:
    """What Anthropic's API answers (400 invalid_request_error) to a request that breaks the rules of extended
    thinking with tool use, else None: every thinking block sent back must be one it signed, unchanged; with thinking
    on, the final assistant message, when it holds tool_use, must start with its thinking block; with thinking off,
    the final assistant message may hold none; `budget_tokens` is at least 1,024 and below max_tokens."""
    enabled = thinking_enabled(body)
    thinking = body.get("thinking") or {}
    budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
    if enabled and thinking.get("type") == "enabled":
        if not isinstance(budget, int) or budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if budget >= int(body.get("max_tokens") or 0):
            return "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation " \
                   f"at {_DOCS}#max-tokens-and-context-window-size-with-extended-thinking"
    messages = body.get("messages") or []
    final = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
    for i, message in enumerate(messages):
        blocks = message.get("content") if isinstance(message.get("content"), list) else []
        if message.get("role") != "assistant":
            continue
        for j, block in enumerate(blocks):
            if block.get("type") in ("thinking", "redacted_thinking"):
                if i == final and not enabled:
                    return THINKING_WHILE_DISABLED.format(i=i, j=j)
                if not signer.valid(block):
                    return BAD_SIGNATURE.format(i=i, j=j)
        if i == final and enabled and any(b.get("type") == "tool_use" for b in blocks) and (
                blocks[0].get("type") not in ("thinking", "redacted_thinking")):
            return MISSING_THINKING.format(i=i, found=blocks[0].get("type"))
    return None


def _text(content: Any) -> str:
    """The text of a `system`, message or tool_result content: a string or a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def chat_view(body: dict[str, Any]) -> dict[str, Any]:
    """A Messages request as the OpenAI-shaped request responders read (messages, tools, params)."""
    messages: list[dict[str, Any]] = []
    if body.get("system"):
        messages.append({"role": "system", "content": _text(body["system"])})
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        if message.get("role") == "assistant":
            calls = [{"id": b["id"], "type": "function",
                      "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {})}}
                     for b in blocks if b.get("type") == "tool_use"]
            messages.append({"role": "assistant", "content": _text(blocks) or None,
                             **({"tool_calls": calls} if calls else {})})
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                messages.append({"role": "tool", "tool_call_id": block.get("tool_use_id"),
                                 "content": _text(block.get("content"))})
        if text := _text(blocks):
            messages.append({"role": "user", "content": text})
    tools = [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                               "parameters": t.get("input_schema") or {}}}
             for t in body.get("tools") or [] if isinstance(t, dict) and "name" in t]
    params = {k: v for k, v in body.items() if k not in ("system", "messages", "tools")}
    return {**params, "messages": messages, **({"tools": tools} if tools else {})}


def message_body(request: dict[str, Any], chat: dict[str, Any], reply: Reply,
                 signer: Signer | None = None) -> dict[str, Any]:
    """The Messages API answer for `reply`: text and tool_use blocks, stop_reason and usage. With thinking on, a
    signed thinking block comes first (its text: the reply's `reasoning_content`, else a line of its own; a
    `redacted: true` in `extra_message` makes it a redacted_thinking block). Its tokens are output tokens, as billed;
    the usage says nothing more about them, as Anthropic's does not."""
    content: list[dict[str, Any]] = []
    if signer is not None and thinking_enabled(request):
        text = str(reply.extra_message.get("reasoning_content") or "I should read the task and the last result, "
                                                                   "then choose the next tool.")
        content.append(signer.redacted(text) if reply.extra_message.get("redacted") else
                       {"type": "thinking", "thinking": text, "signature": signer.sign(text)})
    if reply.content:
        content.append({"type": "text", "text": reply.content})
    for call in reply.tool_calls or []:
        fn = call.get("function") or {}
        arguments = fn.get("arguments") or "{}"
        content.append({"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": fn.get("name", ""),
                        "input": json.loads(arguments) if isinstance(arguments, str) else arguments})
    prompt = len(json.dumps(chat.get("messages", [])) + json.dumps(chat.get("tools", []))) // 4
    completion = max(1, len(json.dumps(content)) // 4)
    usage = reply.usage or {"input_tokens": prompt, "output_tokens": completion}
    return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
            "model": request.get("model", "claude"), "content": content,
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn", "stop_sequence": None,
            "usage": {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, **usage}}


class FakeAnthropic(LoopbackServer):
    """`with FakeAnthropic(key="k") as server:` then give an `anthropic/...` alias `api_base = server.url`.

    `requests` holds each Messages body as received, plus `_auth` (its x-api-key), `_version` (its
    anthropic-version header) and `_chat` (the view responders read). Extended thinking follows the API's rules
    (`thinking_error`): `refused` holds the message of each request refused for breaking them."""

    refused: list[str]

    thread_name = "fake-anthropic"
    signer: Signer
    # Faults as Anthropic words them, for scripts: FakeAnthropic.overloaded(), .prompt_too_long() ...
    fault = staticmethod(fault)
    overloaded = staticmethod(overloaded)
    rate_limited = staticmethod(rate_limited)
    prompt_too_long = staticmethod(prompt_too_long)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def app(self) -> FastAPI:
        app = FastAPI()
        self.signer = Signer()
        self.refused = []

        def unauthorized(request: Request) -> Response | None:
            if self.key is None or request.headers.get("x-api-key") == self.key:
                return None
            return Response(error_body(401, "invalid x-api-key"), status_code=401, media_type="application/json")

        @app.get("/v1/models")
        async def models(request: Request) -> Response:
            return unauthorized(request) or JSONResponse({
                "data": [{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                         for m in self.models],
                "has_more": False, "first_id": self.models[0] if self.models else None,
                "last_id": self.models[-1] if self.models else None})

        @app.post("/v1/messages")
        async def messages(request: Request) -> Response:
            arrived = time.monotonic()
            body = await _json_body(request)
            chat = chat_view(body)
            body.update(_auth=request.headers.get("x-api-key", ""), _version=request.headers.get(
                "anthropic-version", ""), _chat=chat)
            if denied := unauthorized(request):
                self.requests.append(body)
                return denied
            if not request.headers.get("anthropic-version"):
                self.requests.append(body)
                return Response(error_body(400, "anthropic-version: header is required"), status_code=400,
                                media_type="application/json")
            if refused := thinking_error(body, self.signer):
                self.requests.append(body)
                self.refused.append(refused)
                return Response(error_body(400, refused), status_code=400, media_type="application/json")
            reply = await self.scripted(body, arrived, {**chat, "_auth": body["_auth"]})
            return self.render(body, chat, reply)

        return app

    def render(self, body: dict[str, Any], chat: dict[str, Any], reply: Reply) -> Response:
        if reply.fault is not None:  # a wire-neutral fault (Reply.error, storm): Anthropic's words for it
            return Response(error_body(reply.status, reply.fault), status_code=reply.status, headers=reply.headers,
                            media_type="application/json")
        if reply.body is not None:
            return Response(reply.body, status_code=reply.status, headers=reply.headers,
                            media_type="application/json")
        return JSONResponse(message_body(body, chat, reply, self.signer), status_code=reply.status,
                            headers=reply.headers)
