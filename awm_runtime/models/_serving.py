"""What a self-hosted server says about itself: its context window, a tokenizer to count prompts with, and
whether tools sent to it reach the model. Read once before a run (the preflight), never during one.

- llama.cpp `llama-server`: `GET /props` (`default_generation_settings.n_ctx`, the per-slot window, and
  `chat_template_caps.supports_tools`), `POST /apply-template` then `POST /tokenize`.
- vLLM: `GET /v1/models` (`max_model_len`), `POST /tokenize` with chat messages and tools.
- Anything else: the alias's `context_window`, and an estimate of 4 characters a token.

Providers with their own wire (Anthropic's Messages API, Gemini's generateContent) are never probed with
OpenAI-shaped requests: they take tools by API contract, and their windows come from `context_window`.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, replace
from typing import Any, Literal

import httpx

from awm_runtime.models._registry import ModelConfig

ServerKind = Literal["llama.cpp", "vllm", "other"]
# litellm providers whose APIs take tools as part of their own wire (Messages API tool_use, Gemini
# functionDeclarations): tools always reach the model, and an OpenAI-shaped probe would only get a 404.
NATIVE_TOOL_PROVIDERS = frozenset({"anthropic", "gemini", "vertex_ai", "vertex_ai_beta", "bedrock", "bedrock_converse"})
# The estimate when a server cannot count. JSON tool schemas run ~3 characters a token (measured on the
# built-in worlds with SmolLM2's tokenizer), prose ~4: at 4 an estimate refuses only prompts that clearly
# do not fit.
CHARS_PER_TOKEN = 4
PROBE_TOOL = {"type": "function", "function": {
    "name": "lookup_order", "description": "Look up one order by its id.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "integer", "description": "Order id"}},
                   "required": ["order_id"]}}}


@dataclass(frozen=True, slots=True)
class ServerFacts:
    kind: ServerKind
    window: int | None  # tokens one request may hold, prompt and reply together; None: unknown
    window_from: str  # where `window` was read, for messages
    supports_tools: bool | None = None  # llama.cpp's chat_template_caps.supports_tools


@dataclass(frozen=True, slots=True)
class Count:
    tokens: int
    exact: bool  # counted by the server's own tokenizer and chat template, not estimated


def served_name(config: ModelConfig) -> str:
    return config.model.split("/", 1)[1] if "/" in config.model else config.model


def _root(api_base: str) -> str:
    """Tokenizer and /props endpoints live beside /v1, not under it."""
    base = api_base.rstrip("/")
    return base.removesuffix("/v1")


def _headers(config: ModelConfig) -> dict[str, str]:
    key = os.environ.get(config.api_key_env or "", "")
    return {"Authorization": f"Bearer {key}"} if key else {}


async def _get_json(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> Any:
    try:
        resp = await client.get(url, headers=headers)
        return resp.json() if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


async def read_facts(config: ModelConfig, client: httpx.AsyncClient) -> ServerFacts:
    """The server's own word on its window where it gives one; the alias's `context_window` otherwise,
    and also when it is smaller (a deliberate limit)."""
    facts = ServerFacts("other", None, "")
    if config.api_base and not takes_tools(config):
        headers = _headers(config)
        props = await _get_json(client, _root(config.api_base) + "/props", headers)
        settings = props.get("default_generation_settings") if isinstance(props, dict) else None
        if isinstance(settings, dict):
            n_ctx = settings.get("n_ctx")
            caps = props.get("chat_template_caps")
            tools = caps.get("supports_tools") if isinstance(caps, dict) else None
            facts = ServerFacts("llama.cpp", n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None,
                                "llama.cpp /props n_ctx", tools if isinstance(tools, bool) else None)
        else:
            models = await _get_json(client, config.api_base.rstrip("/") + "/models", headers)
            for entry in (models.get("data") or []) if isinstance(models, dict) else []:
                if isinstance(entry, dict) and entry.get("id") == served_name(config) \
                        and isinstance(entry.get("max_model_len"), int):
                    facts = ServerFacts("vllm", entry["max_model_len"], "vLLM /v1/models max_model_len")
                    break
    if config.context_window and (facts.window is None or config.context_window < facts.window):
        facts = replace(facts, window=config.context_window, window_from="the alias's context_window")
    return facts


async def count_prompt(config: ModelConfig, facts: ServerFacts, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]] | None, client: httpx.AsyncClient) -> Count:
    """The prompt's tokens as the server's chat template renders it, or an estimate. With `tito`, the very
    prompt the token-in, token-out transport will send (models/_tito.py)."""
    headers = _headers(config)
    if config.tito and config.api_base:
        from awm_runtime.models._exceptions import AttemptError
        from awm_runtime.models._route import Route
        from awm_runtime.models._tito import TITO

        route = Route("policy", config.alias, config.model, config.api_base, config.api_key_env)
        try:
            return Count(len(await TITO.prompt_ids(route, messages, config.params, 30.0)), True)
        except AttemptError:
            pass  # the preflight says why the engine cannot; the estimate stands in here
    try:
        if facts.kind == "llama.cpp" and config.api_base:
            root = _root(config.api_base)
            body: dict[str, Any] = {"messages": messages, **({"tools": tools} if tools else {})}
            rendered = await client.post(root + "/apply-template", json=body, headers=headers)
            rendered.raise_for_status()
            counted = await client.post(root + "/tokenize", headers=headers, json={
                "content": rendered.json()["prompt"], "add_special": False, "parse_special": True})
            counted.raise_for_status()
            return Count(len(counted.json()["tokens"]), True)
        if facts.kind == "vllm" and config.api_base:
            body = {"model": served_name(config), "messages": messages, "add_generation_prompt": True,
                    **({"tools": tools} if tools else {})}
            counted = await client.post(_root(config.api_base) + "/tokenize", json=body, headers=headers)
            counted.raise_for_status()
            return Count(int(counted.json()["count"]), True)
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        pass  # no usable tokenizer endpoint after all: estimate
    return Count(estimate(messages, tools), False)


def estimate(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
    chars = sum(len(m.get("content") or "") for m in messages) + (len(json.dumps(tools)) if tools else 0)
    return chars // CHARS_PER_TOKEN


def takes_tools(config: ModelConfig) -> bool:
    """Whether the alias's provider takes tools by API contract (no probe needed, or possible)."""
    return config.model.split("/", 1)[0] in NATIVE_TOOL_PROVIDERS


async def tools_problem(config: ModelConfig, facts: ServerFacts, client: httpx.AsyncClient, *,
                        completions: bool) -> str | None:
    """Why tools sent to this endpoint would not reach the model, or None (they do, or it cannot be told).

    llama.cpp's template metadata answers without generating. Otherwise, with `completions`, one-token
    completions with and without a tool, each retried through 429s and 5xx under the alias's retry policy
    (honouring Retry-After). Only definite answers decide: a server that refuses tools answers the tool
    request with a 4xx and the plain one with a 2xx; one that drops them (a template without tool support)
    bills the same prompt for both while billing a longer message more. Anything else cannot be told (a
    warning, not a refusal): no definite answer, or prompt-token counts that do not follow the prompt."""
    if takes_tools(config):
        return None
    if facts.kind == "llama.cpp" and facts.supports_tools is False:
        return "its chat template has no tool support (llama.cpp /props: chat_template_caps.supports_tools = false)"
    if not completions or not config.api_base:
        return None
    url = config.api_base.rstrip("/") + "/chat/completions"
    body = {"model": served_name(config), "messages": [{"role": "user", "content": "Look up order 7."}],
            "max_tokens": 1, **{k: v for k, v in config.params.items() if k == "chat_template_kwargs"}}
    plain, tooled = await asyncio.gather(definite_answer(config, client, url, body),
                                         definite_answer(config, client, url, {**body, "tools": [PROBE_TOOL]}))
    if plain is None or tooled is None or plain.status_code >= 400:
        _could_not_tell(config, "no definite answer to a one-token completion")
        return None
    if tooled.status_code >= 400:
        return f"it refuses requests with tools (HTTP {tooled.status_code}: {_message(tooled.text)})"
    before, after = _prompt_tokens(plain), _prompt_tokens(tooled)
    if before is None or after is None or before <= 0:
        _could_not_tell(config, "it reports no prompt-token counts")
        return None
    if after > before:
        return None
    longer = {**body, "messages": [{"role": "user", "content": "Look up order 7. " + "Then say which order. " * 12}]}
    control = await definite_answer(config, client, url, longer)
    if control is None or control.status_code >= 400 or (_prompt_tokens(control) or 0) <= before:
        _could_not_tell(config, f"it reports {before} prompt tokens whatever the prompt")
        return None
    return f"a tool added no prompt tokens ({before} with and without it), so the chat template drops tools"


def _prompt_tokens(resp: httpx.Response) -> int | None:
    try:
        return int(resp.json()["usage"]["prompt_tokens"])
    except (ValueError, KeyError, TypeError):
        return None


def _could_not_tell(config: ModelConfig, why: str) -> None:
    from awm_runtime._log import get_logger

    get_logger("awm_runtime.models").warning(
        "preflight_native_tools_unknown", alias=config.alias, endpoint=config.endpoint,
        note=f"could not tell whether tools reach the model ({why}); the run goes on with protocol native")


async def definite_answer(config: ModelConfig, client: httpx.AsyncClient, url: str,
                          body: dict[str, Any]) -> httpx.Response | None:
    """The endpoint's definite answer to one POST: a 2xx, a 4xx other than 429, or a 5xx that persisted
    through every retry (llama-server without --jinja answers tools with a 500, every time). 429, 5xx
    and refused connections are retried under the alias's retry policy (Retry-After honoured). Each try
    waits the alias's `timeout_s`, as a call of the run would, and a try that times out is not repeated:
    a 30 s model then answers in 30 s, where a shorter client timeout made it three timeouts, 90 s and
    no answer. None when the retries ran out on a rate limit or a refused connection, or it timed out."""
    from tenacity import AsyncRetrying, RetryError

    from awm_runtime.models._exceptions import AttemptError, parse_retry_after
    from awm_runtime.models._retry import CallRetries, RetryPolicy, tenacity_kwargs

    def failed(kind: Any, detail: str, retry_after: float | None = None) -> AttemptError:
        return AttemptError(f"preflight: {detail}", kind=kind, role="preflight", alias=config.alias,
                            retry_after_s=retry_after, detail=detail)

    async def once() -> httpx.Response:
        try:
            resp = await client.post(url, json=body, headers=_headers(config), timeout=config.timeout_s)
        except httpx.TimeoutException as exc:
            raise failed("timeout", f"{type(exc).__name__}") from exc
        except httpx.HTTPError as exc:
            raise failed("connection", f"{type(exc).__name__}") from exc
        if resp.status_code == 429:
            raise failed("rate_limit", "HTTP 429", parse_retry_after(resp.headers.get("retry-after")))
        if resp.status_code >= 500:
            persisted.append(resp)
            raise failed("server", f"HTTP {resp.status_code}")
        persisted.clear()
        return resp

    persisted: list[httpx.Response] = []
    policy = RetryPolicy.of(config)
    retries = CallRetries(replace(policy, retries={**policy.retries, "timeout": 0}), config.endpoint)
    try:
        async for attempt in AsyncRetrying(**tenacity_kwargs(retries, asyncio.sleep)):
            with attempt:
                return await once()
    except RetryError as exc:
        error = exc.last_attempt.exception()
        if isinstance(error, AttemptError) and error.kind == "server" and persisted:
            return persisted[-1]
        return None
    except AttemptError:
        return None
    return None  # pragma: no cover - tenacity either returns or raises


def _message(text: str) -> str:
    try:
        data = json.loads(text)
        error = data.get("error", data) if isinstance(data, dict) else data
        return str(error.get("message", error) if isinstance(error, dict) else error)[:200]
    except ValueError:
        return text[:200]
