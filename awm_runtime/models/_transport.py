"""How one attempt reaches the model: litellm in this event loop, or in a model-call process."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from awm_runtime._encodable import encodable
from awm_runtime.models._exceptions import AttemptError, to_attempt_error
from awm_runtime.models._http import DIRECT_HTTP
from awm_runtime.models._litellm import litellm
from awm_runtime.models._reply import ModelReply, to_reply
from awm_runtime.models._route import Route, Transport
from awm_runtime.models._tokens import TokenDataError


class InProcess:
    """litellm.acompletion in the caller's event loop."""

    async def attempt(self, route: Route, messages: list[dict[str, Any]], params: dict[str, Any],
                      timeout_s: float) -> ModelReply:
        key = route.api_key()
        messages = encodable(messages)[0]  # a lone surrogate from the agent goes out as U+FFFD
        started = time.perf_counter()
        try:
            # `_skip_mcp_handler`: litellm otherwise imports its MCP gateway on every call with tools, which
            # needs mcp 2.x; we pin mcp 1.x (issue 14) and never use litellm's MCP tools.
            response = await litellm().acompletion(model=route.model, messages=messages, api_base=route.api_base,
                                                   api_key=key, timeout=timeout_s, num_retries=0,
                                                   _skip_mcp_handler=True, **params)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise to_attempt_error(exc, role=route.role, alias=route.alias, secrets=(key,) if key else ()) from exc
        try:
            return to_reply(response, time.perf_counter() - started)
        except TokenDataError as exc:  # the engine's token data is malformed: its error, never a silent record
            raise AttemptError(f"{route.role} model {route.alias!r} failed (server): {exc}", kind="server",
                               role=route.role, alias=route.alias, detail=str(exc)) from exc


IN_PROCESS = InProcess()
_shared: Transport | None = None


def use_transport(transport: Transport | None) -> None:
    """Route the calls of clients created from now on (real models only) through `transport`;
    None goes back to in-process litellm."""
    global _shared
    _shared = transport


def direct_http(model: str, api_base: str | None, transport: str) -> bool:
    """Whether an alias takes the lean OpenAI-wire path: when asked to, or (auto) for a self-hosted
    OpenAI-compatible server, where litellm has nothing to translate. Hosted APIs keep litellm."""
    if transport != "auto" or not api_base:
        return transport == "http"
    return model.split("/", 1)[0] in ("openai", "hosted_vllm") and "api.openai.com" not in api_base


def uses_call_procs(model: str, api_base: str | None, transport: str = "auto") -> bool:
    """Whether calls of this alias would go through litellm, and so through model-call processes when there are any."""
    return not model.startswith("sim/") and not direct_http(model, api_base, transport)


def transport_for(model: str, api_base: str | None, transport: str = "auto", *, tito: bool = False) -> Transport:
    if tito and not model.startswith("sim/"):
        from awm_runtime.models._tito import TITO

        return TITO
    if model.startswith("sim/"):  # simulations answer from this process's memory of the tasks
        if transport == "litellm":
            return IN_PROCESS  # through litellm's custom provider, as before issue 32 (for comparison)
        from awm_runtime.models.sim._transport import SIM_TRANSPORT

        return SIM_TRANSPORT
    if direct_http(model, api_base, transport):
        return DIRECT_HTTP
    return IN_PROCESS if _shared is None else _shared
