"""Preflight: before a run starts, every key is set, every endpoint answers, every model exists
(where the server can say), and one tiny completion per alias goes through litellm, so a broken
install or a bad parameter fails once, here, instead of in every episode. One line per problem."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine, Iterable
from typing import Any, Literal

import httpx

from awm_runtime._errors import ConfigError
from awm_runtime._types import ModelRole
from awm_runtime.models._exceptions import AttemptError
from awm_runtime.models._reasoning import exhausted, log, reasoning_params
from awm_runtime.models._registry import ModelConfig, toml_table
from awm_runtime.models._route import Route
from awm_runtime.models._transport import transport_for

PreflightMode = Literal["full", "quick", "off"]
# A busy or rate-limited endpoint is alive: the run's retries handle it. Anything else fails every episode.
_TRANSIENT = ("rate_limit", "server", "timeout")
_PROBE_TOOL = {"type": "function", "function": {"name": "noop", "description": "Does nothing.",
                                                "parameters": {"type": "object", "properties": {}}}}


class _Use:
    """One alias config and every role that calls it."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.roles: list[ModelRole] = []

    @property
    def label(self) -> str:
        return f"{'/'.join(self.roles)} model {self.config.alias!r}"

    def flag(self, what: str) -> str:
        """How to fix `what` (api_base, model, api_key_env): in awm.toml, or with the role's flag."""
        flag = {"api_base": "base URL", "model": "model PROVIDER/NAME", "api_key_env": "key-env VAR"}[what]
        option, _, meta = flag.partition(" ")
        return f"{what} under {toml_table(self.config.alias)} in awm.toml, or --{self.roles[0]}-{option} {meta}"


# Providers whose model list needs their own path and key header (their APIs refuse a bearer token).
_ANTHROPIC_BASE = "https://api.anthropic.com"
_GEMINI_BASE = "https://generativelanguage.googleapis.com"


def _models_url(cfg: ModelConfig) -> str | None:
    provider = cfg.model.split("/", 1)[0]
    root = (cfg.api_base or "").rstrip("/")
    if provider == "anthropic":  # litellm posts to {api_base}/v1/messages
        return (root.removesuffix("/v1/messages").removesuffix("/v1") or _ANTHROPIC_BASE) + "/v1/models"
    if provider == "gemini":  # litellm posts to {api_base}/v1beta/models/{model}:generateContent
        return (root.removesuffix("/v1beta") or _GEMINI_BASE) + "/v1beta/models"
    if cfg.api_base:
        return root + "/models"
    if cfg.model.startswith("openai/"):
        base = os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE") or "https://api.openai.com/v1"
        return base.rstrip("/") + "/models"
    return None  # other hosted providers: the test completion is the check


def _auth_headers(model: str, key: str) -> dict[str, str]:
    """How each provider takes its key: Anthropic's x-api-key, Gemini's x-goog-api-key, else a bearer token."""
    if not key:
        return {}
    provider = model.split("/", 1)[0]
    if provider == "anthropic":
        return {"x-api-key": key, "anthropic-version": "2023-06-01"}
    if provider == "gemini":
        return {"x-goog-api-key": key}
    return {"Authorization": f"Bearer {key}"}


def _listed_ids(data: object) -> set[str]:
    """Model ids from a model list: OpenAI's and Anthropic's `data[].id`, Gemini's `models[].name`."""
    if not isinstance(data, dict):
        return set()
    ids = {str(m.get("id")) for m in data.get("data") or [] if isinstance(m, dict)}
    ids |= {str(m.get("name", "")).removeprefix("models/") for m in data.get("models") or [] if isinstance(m, dict)}
    return ids


async def _probe_endpoint(users: list[_Use], url: str, timeout_s: float) -> list[str]:
    """Fix-it lines for the aliases behind one endpoint: unreachable, key refused, or model not served."""
    use, cfg = users[0], users[0].config
    key = os.environ.get(cfg.api_key_env or "", "")
    headers = _auth_headers(cfg.model, key)
    base = url.removesuffix("/models")
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            resp = await client.get(url, headers=headers)
    except httpx.TimeoutException:
        return [f"{use.label}: {base} did not answer within {timeout_s:g}s; start the server, "
                f"or fix {use.flag('api_base')}"]
    except httpx.HTTPError as exc:
        return [f"{use.label}: cannot reach {base} ({type(exc).__name__}); start the server, "
                f"or fix {use.flag('api_base')}"]
    if resp.status_code in (401, 403) or (resp.status_code == 400 and "API_KEY_INVALID" in resp.text):
        where = cfg.api_key_env or "(no key variable configured)"
        return [f"{use.label}: {base} rejected the key in {where} (HTTP {resp.status_code}); check the key, "
                f"or set {use.flag('api_key_env')}"]
    if resp.status_code >= 400:
        return []  # some servers have no /models; the endpoint answered, which is what we can check
    try:
        ids = _listed_ids(resp.json())
    except ValueError:
        return []
    lines = []
    for u in users:
        model = u.config.model
        served = model.split("/", 1)[1] if "/" in model else model
        if ids and served not in ids and model not in ids:
            listed = ", ".join(sorted(ids)[:5]) + (", …" if len(ids) > 5 else "")
            lines.append(f"{u.label}: {base} does not serve {served!r} (it serves: {listed}); fix {u.flag('model')}")
    return lines


async def _probe_completion(use: _Use, timeout_s: float) -> str | None:
    """One real completion of a few tokens through litellm, the way the run will call it."""
    cfg = use.config
    route = Route(use.roles[0], cfg.alias, cfg.model, cfg.api_base, cfg.api_key_env)
    # A few tokens, except for a reasoning alias: Anthropic refuses a thinking budget that is not below max_tokens,
    # and a reasoning model would spend 8 on thinking; its own max_tokens is what the run will send.
    params = {**cfg.params} if reasoning_params(cfg.params) else {**cfg.params, "max_tokens": 8}
    if cfg.protocol == "native":
        params["tools"] = [_PROBE_TOOL]  # the tool path imports more of litellm (e.g. its MCP bridge)
    timeout = min(cfg.timeout_s, timeout_s)
    try:
        async with asyncio.timeout(timeout + 5):
            transport = transport_for(cfg.model, cfg.api_base, cfg.transport, tito=cfg.tito)
            reply = await transport.attempt(route, [{"role": "user", "content": "Reply with OK."}], params, timeout)
    except TimeoutError:
        return None  # slow, not broken
    except AttemptError as exc:
        if exc.kind in _TRANSIENT:
            return None
        if exc.kind == "fatal":
            return (f"{use.label}: a test completion failed inside this process, before reaching the endpoint: "
                    f"{exc.detail}. Reinstall: pip install -c requirements.lock -e .")
        if exc.kind == "auth":
            return f"{use.label}: the endpoint rejected the key in {cfg.api_key_env or '(none)'}: {exc.detail}"
        if exc.kind == "not_found":
            return f"{use.label}: the endpoint does not know {cfg.model!r}: {exc.detail}; fix {use.flag('model')}"
        if exc.kind == "connection":
            return f"{use.label}: cannot reach the endpoint: {exc.detail}; fix {use.flag('api_base')}"
        return (f"{use.label}: a one-line test completion was refused ({exc.kind}): {exc.detail}; check model and "
                f"params under {toml_table(cfg.alias)} (or run with --preflight quick)")
    if reasoning_params(cfg.params) and (spent := exhausted(reply, "/".join(use.roles), cfg.alias, cfg.params)):
        # Its own max_tokens did not fit "Reply with OK." after its reasoning: a judge or expert would answer nothing.
        log.warning("reasoning_max_tokens", alias=cfg.alias, note=spent)
    return None


async def _tito_problem(use: _Use, timeout_s: float) -> str | None:
    """A `tito = true` alias needs an engine that takes token-id prompts; nothing falls back to chat."""
    cfg = use.config
    if not cfg.tito:
        return None
    from awm_runtime.models._tito import engine_kind

    key = os.environ.get(cfg.api_key_env or "", "") or None
    if cfg.api_base and await engine_kind(cfg.api_base, cfg.model, key, timeout_s):
        return None
    return (f"{use.label}: tito = true needs a llama.cpp llama-server or vLLM endpoint that takes token-id prompts, "
            f"and {cfg.api_base or cfg.model} is neither (a hosted API cannot); drop tito from {toml_table(cfg.alias)}")


async def preflight(roles: Iterable[tuple[ModelRole, ModelConfig]], *, mode: PreflightMode = "full",
                    timeout_s: float = 10.0, alongside: Coroutine[Any, Any, None] | None = None) -> None:
    """Raise one ConfigError listing every problem, one line each, or return if all is well.

    `alongside`: a further check that may raise ConfigError (the run's fit check), awaited once keys and
    endpoints have passed, side by side with the test completions where every alias's max_concurrency
    allows it: each of them waits for a model reply, so against a 30 s model they cost 30 s together,
    not 30 s each."""
    if mode == "off":
        if alongside is not None:
            alongside.close()
        return
    uses: dict[tuple[str, str, str | None, str | None], _Use] = {}
    for role, cfg in roles:
        if not cfg.simulated:
            use = uses.setdefault((cfg.alias, cfg.model, cfg.api_base, cfg.api_key_env), _Use(cfg))
            if role not in use.roles:
                use.roles.append(role)
    problems: list[str] = []
    ready: list[_Use] = []
    for use in uses.values():
        env = use.config.api_key_env
        if env and not os.environ.get(env):
            problems.append(f"{use.label} needs an API key: export {env}=… (or name another variable: "
                            f"{use.flag('api_key_env')})")
        else:
            ready.append(use)
    endpoints: dict[tuple[str, str], list[_Use]] = {}
    for use in ready:
        url = _models_url(use.config)
        if url is not None:
            endpoints.setdefault((url, use.config.api_key_env or ""), []).append(use)
    checks = await asyncio.gather(*(_probe_endpoint(users, url, timeout_s) for (url, _), users in endpoints.items()))
    problems.extend(line for lines in checks for line in lines)
    if not problems:
        problems.extend(p for p in await asyncio.gather(*(_tito_problem(u, timeout_s) for u in ready)) if p)
    if problems:
        if alongside is not None:
            alongside.close()
        raise ConfigError("\n".join(problems))
    probes = [_probe_completion(u, timeout_s * 3) for u in ready] if mode == "full" else []
    # Side by side only where every alias allows that many calls at once (the fit check sends up to two):
    # the preflight must not exceed a max_concurrency the run itself keeps.
    if alongside is not None and all(u.config.max_concurrency >= len(probes) + 2 for u in ready):
        results = await asyncio.gather(*probes, alongside, return_exceptions=True)
    else:
        results = await asyncio.gather(*probes, return_exceptions=True)
        if alongside is not None:
            results += await asyncio.gather(alongside, return_exceptions=True)
    for result in results:
        if isinstance(result, ConfigError):
            problems.append(str(result))
        elif isinstance(result, BaseException):
            raise result
        elif result:
            problems.append(result)
    if problems:
        raise ConfigError("\n".join(problems))
