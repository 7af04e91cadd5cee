"""A lean transport for OpenAI-compatible servers (vLLM, SGLang, proxies): one POST per attempt.

litellm spends several ms of CPU per call (a thread hop to build the request, the OpenAI SDK's
transforms, logging, cost lookups). Against a self-hosted server that speaks the OpenAI wire
format none of that translation is needed, and at 1,000 calls in flight it is what saturates the
event loop. This sends the body as given and reads the answer with the same `to_reply` as litellm.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import orjson

from awm_runtime._encodable import dumps_encodable
from awm_runtime.models._exceptions import AttemptError, kind_for_status, parse_retry_after
from awm_runtime.models._reply import ModelReply, to_reply
from awm_runtime.models._route import Route
from awm_runtime.models._tokens import TokenDataError

_sessions: dict[asyncio.AbstractEventLoop, Any] = {}


class _View:
    """Attribute access over parsed JSON, so `to_reply` reads it exactly like a litellm response."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        return _wrap(self._data.get(name))


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return _View(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _session() -> Any:
    """One aiohttp session per event loop, with no pool cap: the endpoint limiter is the bound."""
    import aiohttp

    loop = asyncio.get_running_loop()
    session = _sessions.get(loop)
    if session is None or session.closed:
        for old in [lp for lp in _sessions if lp.is_closed()]:
            del _sessions[old]
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, ttl_dns_cache=300, keepalive_timeout=60)
        session = _sessions[loop] = aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())
    return session


def _served_name(model: str) -> str:
    return model.split("/", 1)[1] if "/" in model else model


class DirectHTTP:
    """POST {api_base}/chat/completions, no translation. Needs an api_base."""

    async def attempt(self, route: Route, messages: list[dict[str, Any]], params: dict[str, Any],
                      timeout_s: float) -> ModelReply:
        import aiohttp

        key = route.api_key()
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = _body(_served_name(route.model), messages, params)
        url = f"{(route.api_base or '').rstrip('/')}/chat/completions"
        started = time.perf_counter()
        try:
            async with _session().post(url, data=body, headers=headers,
                                       timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
                raw = await resp.read()
                status, retry_after = resp.status, resp.headers.get("retry-after")
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise self._error(route, "timeout", f"no answer in {timeout_s:g}s") from exc
        except aiohttp.ClientError as exc:
            raise self._error(route, "connection", f"{type(exc).__name__}: {exc}") from exc
        if status >= 400:
            text = raw[:2000].decode("utf-8", "replace")
            raise self._error(route, kind_for_status(status, text), f"HTTP {status}: {_message(text)}", key,
                              parse_retry_after(retry_after) if status == 429 else None)
        try:
            data = _loads(raw)
            return to_reply(_View(data), time.perf_counter() - started)
        except TokenDataError as exc:  # the engine's token data is malformed: its error, never a silent record
            raise self._error(route, "server", str(exc), key) from exc
        except (ValueError, AttributeError, IndexError, TypeError, KeyError) as exc:
            # A 200 that is not a completion: a proxy glitch, worth another attempt.
            raise self._error(route, "server", f"malformed completion ({type(exc).__name__}): "
                                               f"{raw[:120].decode('utf-8', 'replace')}") from exc

    @staticmethod
    def _error(route: Route, kind: Any, detail: str, key: str | None = None,
               retry_after_s: float | None = None) -> AttemptError:
        from awm_runtime.logs import redact

        detail = redact(detail.splitlines()[0][:300] if detail else kind, (key,) if key else ())
        return AttemptError(f"{route.role} model {route.alias!r} failed ({kind}): {detail}", kind=kind,
                            role=route.role, alias=route.alias, retry_after_s=retry_after_s, detail=detail)


_TOOLS_JSON: dict[int, tuple[list[dict[str, Any]], bytes]] = {}  # id(tools) -> (tools, their JSON)


def _body(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> bytes:
    """The request body. Text the agent planted (a lone surrogate an expert echoed) goes out as U+FFFD, never as
    an error. The tools list is the same object for every call of a tool set (the protocol builds it once), and
    its JSON (36 KB for a 44-tool scenario, ~50 us to encode) is encoded once and spliced in (`orjson.Fragment`)."""
    tools = params.get("tools")
    if not tools:
        return dumps_encodable({"model": model, "messages": messages, **params})[0]
    held = _TOOLS_JSON.get(id(tools))
    if held is None or held[0] is not tools:
        if len(_TOOLS_JSON) >= 1024:
            _TOOLS_JSON.clear()
        held = _TOOLS_JSON[id(tools)] = (tools, dumps_encodable(tools)[0])  # holding the list keeps its id unique
    rest = {k: v for k, v in params.items() if k != "tools"}
    return dumps_encodable({"model": model, "messages": messages, **rest, "tools": orjson.Fragment(held[1])})[0]


def _loads(raw: bytes) -> Any:
    """A completion body. orjson refuses a lone surrogate escape (`"\\ud800"`) that a model wrote or echoed;
    Python's json reads it, as litellm's path does, and what the text then holds is the agent's to answer for
    (the parser, the records and the next request each deal with it)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def _message(text: str) -> str:
    """The provider's error message out of an OpenAI-style error body, else the body."""
    try:
        data = orjson.loads(text)
        error = data.get("error", data) if isinstance(data, dict) else data
        return str(error.get("message", error) if isinstance(error, dict) else error)
    except (orjson.JSONDecodeError, AttributeError):
        return text


async def close_sessions() -> None:
    loop = asyncio.get_running_loop()
    session = _sessions.pop(loop, None)
    if session is not None:
        await session.close()


DIRECT_HTTP = DirectHTTP()
