"""A scriptable server speaking the Gemini API's generateContent (`POST /v1beta/models/{model}:generateContent`).

The shapes follow Google's API reference: the key in `x-goog-api-key` (or `?key=`); a request's `contents`
of `user` / `model` turns whose `parts` are `text`, `functionCall` or `functionResponse`, its
`systemInstruction`, `tools[].functionDeclarations` and `generationConfig`; a reply
`{"candidates": [{"content": {"role": "model", "parts": [...]}, "finishReason": "STOP"}], "usageMetadata"}`;
errors `{"error": {"code", "message", "status"}}` (429 RESOURCE_EXHAUSTED, 503 UNAVAILABLE, 500 INTERNAL,
400 INVALID_ARGUMENT, which is also what a bad key gets). Responders read the request as an OpenAI-shaped
chat view, so the scripts of the OpenAI server serve here too.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from awm_runtime.testing._loopback import LoopbackServer, Reply
from awm_runtime.testing._server import _json_body

# google.rpc status names of each HTTP status (the Gemini API's troubleshooting guide).
STATUSES = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
            500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def error_body(status: int, message: str, rpc_status: str | None = None,
               details: list[dict[str, Any]] | None = None) -> str:
    """A Gemini API error body for `status`."""
    error: dict[str, Any] = {"code": status, "message": message,
                             "status": rpc_status or STATUSES.get(status, "INTERNAL" if status >= 500 else "UNKNOWN")}
    if details:
        error["details"] = details
    return json.dumps({"error": error})


def fault(status: int, message: str, rpc_status: str | None = None, details: list[dict[str, Any]] | None = None,
          **headers: str) -> Reply:
    """A failed answer worded as the Gemini API does."""
    return Reply(content=None, status=status, body=error_body(status, message, rpc_status, details),
                 headers={k.replace("_", "-"): v for k, v in headers.items()})


def resource_exhausted(retry_delay: str = "0.05s") -> Reply:
    """HTTP 429 RESOURCE_EXHAUSTED, with the RetryInfo detail the API attaches."""
    return fault(429, "You exceeded your current quota, please check your plan and billing details.",
                 details=[{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}])


def unavailable() -> Reply:
    """HTTP 503 UNAVAILABLE: the model is overloaded (retryable)."""
    return fault(503, "The model is overloaded. Please try again later.")


def internal() -> Reply:
    """HTTP 500 INTERNAL."""
    return fault(500, "An internal error has occurred. Please retry or report in "
                      "https://developers.generativeai.google/guide/troubleshooting")


def token_limit(tokens: int = 1_054_016, limit: int = 1_048_576) -> Reply:
    """HTTP 400 INVALID_ARGUMENT: the prompt does not fit the model's input token limit."""
    return fault(400, f"The input token count ({tokens}) exceeds the maximum number of tokens allowed ({limit}).")


def bad_key() -> Reply:
    """What the API answers a wrong key: HTTP 400 INVALID_ARGUMENT, reason API_KEY_INVALID."""
    return fault(400, "API key not valid. Please pass a valid API key.", details=[
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
         "domain": "googleapis.com", "metadata": {"service": "generativelanguage.googleapis.com"}}])


def _texts(parts: list[dict[str, Any]]) -> str:
    """The answer text of `parts`: thought summaries (`thought: true`) are not part of it."""
    return "".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
                   and not p.get("thought"))


# Google's words for a functionCall part sent back without its signature (the Gemini API, as users report it).
MISSING_SIGNATURE = ("Function call is missing a thought_signature in functionCall parts. This is required for tools "
                     "to work correctly, and missing thought_signature may lead to degraded model performance. "
                     "Additional data, function call `default_api:{name}` , position {position}. Please refer to "
                     "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.")
BAD_SIGNATURE = "Corrupted thought signature."
# The value Google documents for history it did not produce (litellm sends it for a call that lost its signature):
# accepted, and the model then works without its earlier thoughts.
DUMMY_SIGNATURES = ("skip_thought_signature_validator", "context_engineering_is_the_way_to_go")


def thinking_config(body: dict[str, Any]) -> dict[str, Any] | None:
    """A request's generationConfig.thinkingConfig, if any (camelCase or snake_case)."""
    config = _get(body, "generationConfig") or {}
    thinking = _get(config, "thinkingConfig") if isinstance(config, dict) else None
    return thinking if isinstance(thinking, dict) else None


def _is_dummy(signature: str) -> bool:
    """Whether a signature is one of the documented dummies, as given or base64-encoded (litellm encodes it)."""
    try:
        decoded = base64.b64decode(signature, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        decoded = ""
    return signature in DUMMY_SIGNATURES or decoded in DUMMY_SIGNATURES


class Signatures:
    """The thought signatures a server issued, and the checks Gemini makes on those sent back: in the current turn
    (the model steps since the last user text), each step's first functionCall part carries the signature it came
    with. A documented dummy passes and is counted in `dummies`: the model lost its thoughts, silently."""

    def __init__(self) -> None:
        self.issued: set[str] = set()
        self.dummies = 0

    def issue(self) -> str:
        signature = base64.b64encode(uuid.uuid4().bytes + uuid.uuid4().bytes).decode()
        self.issued.add(signature)
        return signature

    def error(self, body: dict[str, Any]) -> str | None:
        contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
        start = max((i for i, c in enumerate(contents) if c.get("role") != "model" and any(
            isinstance(p, dict) and isinstance(p.get("text"), str) for p in c.get("parts") or [])), default=0)
        for position, turn in enumerate(contents):
            if position < start or turn.get("role") != "model":
                continue
            calls = [p for p in turn.get("parts") or [] if isinstance(p, dict) and _get(p, "functionCall")]
            if not calls:
                continue
            signature = _get(calls[0], "thoughtSignature")
            if not signature:
                return MISSING_SIGNATURE.format(name=_get(calls[0], "functionCall").get("name", ""),
                                                position=position)
            if _is_dummy(str(signature)):
                self.dummies += 1
            elif signature not in self.issued:
                return BAD_SIGNATURE
        return None


def _response_text(response: Any) -> str:
    """A functionResponse's `response` as the tool message it came from: litellm wraps the text as
    {"content": text}; anything else is the JSON."""
    if isinstance(response, dict) and set(response) <= {"content", "name"} and isinstance(response.get("content"),
                                                                                        str):
        return response["content"]
    return json.dumps(response)


def _get(obj: dict[str, Any], camel: str) -> Any:
    """A field by its JSON name (camelCase) or its proto name (snake_case): the API takes both, and
    litellm sends the latter."""
    if camel in obj:
        return obj[camel]
    return obj.get("".join(f"_{c.lower()}" if c.isupper() else c for c in camel))


def chat_view(body: dict[str, Any], model: str) -> dict[str, Any]:
    """A generateContent request as the OpenAI-shaped request responders read (messages, tools, params)."""
    messages: list[dict[str, Any]] = []
    system = _get(body, "systemInstruction")
    if isinstance(system, dict):
        messages.append({"role": "system", "content": _texts(system.get("parts") or [])})
    calls_seen = 0
    pending: list[str] = []  # call ids a functionResponse answers in order (Gemini's parts carry no id)
    for turn in body.get("contents") or []:
        parts = [p for p in turn.get("parts") or [] if isinstance(p, dict)]
        if turn.get("role") == "model":
            calls: list[dict[str, Any]] = []
            for p in parts:
                if fc := _get(p, "functionCall"):
                    arguments = json.dumps(fc.get("args") or {})
                    calls.append({"id": str(fc.get("id") or f"call_{calls_seen}"), "type": "function",
                                  "function": {"name": fc.get("name", ""), "arguments": arguments}})
                    calls_seen += 1
            pending = [str(c["id"]) for c in calls]
            messages.append({"role": "assistant", "content": _texts(parts) or None,
                             **({"tool_calls": calls} if calls else {})})
            continue
        for p in parts:
            if fr := _get(p, "functionResponse"):
                call_id = fr.get("id") or (pending.pop(0) if pending else None)
                messages.append({"role": "tool", "name": fr.get("name"), "tool_call_id": call_id,
                                 "content": _response_text(fr.get("response"))})
        if text := _texts(parts):
            messages.append({"role": "user", "content": text})
    tools = [{"type": "function", "function": {"name": d["name"], "description": d.get("description", ""),
                                               "parameters": d.get("parameters") or {}}}
             for t in body.get("tools") or [] for d in _get(t, "functionDeclarations") or []]
    config = _get(body, "generationConfig") or {}
    params = {"max_tokens": _get(config, "maxOutputTokens"), "temperature": config.get("temperature")}
    return {"model": model, **{k: v for k, v in params.items() if v is not None}, "messages": messages,
            **({"tools": tools} if tools else {})}


def generate_body(model: str, chat: dict[str, Any], reply: Reply, signatures: Signatures | None = None,
                  include_thoughts: bool = False) -> dict[str, Any]:
    """The generateContent answer for `reply`: text and functionCall parts, finishReason and usageMetadata.

    From a thinking model (`signatures` given): each functionCall part carries a thoughtSignature (the first of a
    step only, as Gemini does for parallel calls), the usage counts the thinking in `thoughtsTokenCount` (outside
    `candidatesTokenCount`, as Gemini 2.5 and 3 report it), and `include_thoughts` adds the thought summary as a
    `thought: true` part. The thinking text is the reply's `reasoning_content`, else a line of its own."""
    parts: list[dict[str, Any]] = []
    thought = str(reply.extra_message.get("reasoning_content") or "Which tool gets me closer to the goal?")
    if signatures is not None and include_thoughts:
        parts.append({"text": thought, "thought": True})
    if reply.content:
        parts.append({"text": reply.content})
    for i, call in enumerate(reply.tool_calls or []):
        fn = call.get("function") or {}
        arguments = fn.get("arguments") or "{}"
        part: dict[str, Any] = {"functionCall": {"name": fn.get("name", ""), "args": json.loads(arguments)
                                                 if isinstance(arguments, str) else arguments}}
        if signatures is not None and i == 0:
            part["thoughtSignature"] = signatures.issue()
        parts.append(part)
    prompt = len(json.dumps(chat.get("messages", [])) + json.dumps(chat.get("tools", []))) // 4
    completion = max(1, len(json.dumps([p for p in parts if not p.get("thought")])) // 4)
    thoughts = max(1, len(thought) // 4) if signatures is not None else 0
    usage = reply.usage or {"promptTokenCount": prompt, "candidatesTokenCount": completion,
                            "totalTokenCount": prompt + completion + thoughts,
                            **({"thoughtsTokenCount": thoughts} if thoughts else {})}
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage, "modelVersion": model, "responseId": uuid.uuid4().hex[:22]}


class FakeGemini(LoopbackServer):
    """`with FakeGemini(key="k") as server:` then give a `gemini/...` alias `api_base = server.url`.

    `requests` holds each generateContent body as received, plus `_auth` (its key, from the header or
    `?key=`), `_model` (from the path) and `_chat` (the view responders read)."""

    thread_name = "fake-gemini"

    def __init__(self, *, thinking: bool = False, **kwargs: Any) -> None:
        """`thinking=True`: a thinking model (Gemini 2.5, 3), whatever the request asks; else one that thinks
        when a request's thinkingConfig asks it to (a budget other than 0, or a level)."""
        super().__init__(**kwargs)
        self.thinking = thinking
        self.signatures = Signatures()
        self.refused: list[str] = []  # the message of each request refused for a missing or corrupted signature

    def thinks(self, body: dict[str, Any]) -> bool:
        """Whether this request is answered by a thinking model."""
        config = thinking_config(body)
        if config is not None and _get(config, "thinkingBudget") == 0:
            return False
        return self.thinking or bool(config and (_get(config, "thinkingBudget") or _get(config, "thinkingLevel")
                                                 or _get(config, "includeThoughts")))
    # Faults as the Gemini API words them, for scripts: FakeGemini.resource_exhausted(), .token_limit() ...
    fault = staticmethod(fault)
    resource_exhausted = staticmethod(resource_exhausted)
    unavailable = staticmethod(unavailable)
    internal = staticmethod(internal)
    token_limit = staticmethod(token_limit)
    bad_key = staticmethod(bad_key)

    @property
    def url(self) -> str:
        """The api_base litellm wants: it posts to {api_base}/models/{model}:generateContent."""
        return f"http://127.0.0.1:{self.port}/v1beta"

    @staticmethod
    def _key(request: Request) -> str:
        return request.headers.get("x-goog-api-key") or request.query_params.get("key") or ""

    def app(self) -> FastAPI:
        app = FastAPI()

        def unauthorized(request: Request) -> Response | None:
            if self.key is None or self._key(request) == self.key:
                return None
            reply = bad_key()
            return Response(reply.body, status_code=reply.status, media_type="application/json")

        @app.get("/v1beta/models")
        async def models(request: Request) -> Response:
            return unauthorized(request) or JSONResponse({"models": [
                {"name": f"models/{m}", "displayName": m, "supportedGenerationMethods": ["generateContent"]}
                for m in self.models]})

        @app.post("/v1beta/models/{target}")
        async def generate(target: str, request: Request) -> Response:
            arrived = time.monotonic()
            model, _, method = target.partition(":")
            body = await _json_body(request)
            chat = chat_view(body, model)
            body.update(_auth=self._key(request), _model=model, _method=method, _chat=chat)
            if denied := unauthorized(request):
                self.requests.append(body)
                return denied
            if method != "generateContent":
                self.requests.append(body)
                return Response(error_body(404, f"Method {method!r} is not served by this fake."), status_code=404,
                                media_type="application/json")
            thinks = self.thinks(body)
            if thinks and (refused := self.signatures.error(body)):
                self.requests.append(body)
                self.refused.append(refused)
                return Response(error_body(400, refused), status_code=400, media_type="application/json")
            reply = await self.scripted(body, arrived, {**chat, "_auth": body["_auth"]})
            config = thinking_config(body) or {}
            return self.render(model, chat, reply, self.signatures if thinks else None,
                               bool(_get(config, "includeThoughts")))

        return app

    @staticmethod
    def render(model: str, chat: dict[str, Any], reply: Reply, signatures: Signatures | None = None,
               include_thoughts: bool = False) -> Response:
        if reply.fault is not None:  # a wire-neutral fault (Reply.error, storm): Gemini's words for it
            return Response(error_body(reply.status, reply.fault), status_code=reply.status, headers=reply.headers,
                            media_type="application/json")
        if reply.body is not None:
            return Response(reply.body, status_code=reply.status, headers=reply.headers,
                            media_type="application/json")
        return JSONResponse(generate_body(model, chat, reply, signatures, include_thoughts), status_code=reply.status,
                            headers=reply.headers)
