"""The simulations without litellm: one attempt is `simulate` in this process, answered as litellm's
`sim` provider answers it (same message, same usage), at a fraction of the CPU.

litellm's custom-provider path costs a few ms of CPU per call (request building, logging, cost
lookups); the simulation itself costs well under one. `awm-run --policy sim/oracle` over ten
thousand tasks spent most of its model CPU there.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from awm_runtime._types import Usage
from awm_runtime.models._reply import ModelReply
from awm_runtime.models._route import Route
from awm_runtime.models.sim import simulate


class SimTransport:
    """A Transport for `sim/…` models: what `SimProvider` answers through litellm, without litellm."""

    async def attempt(self, route: Route, messages: list[dict[str, Any]], params: dict[str, Any],
                      timeout_s: float) -> ModelReply:
        sim = params.get("sim")
        latency = float(sim.get("latency_s", 0.0)) if isinstance(sim, dict) else 0.0
        if latency > 0:
            await asyncio.sleep(latency)
        started = time.perf_counter()
        try:
            message = simulate(route.model, messages, params)
        except Exception as exc:  # a simulation bug is a failed call of its episode, classified like litellm's
            from awm_runtime.models._exceptions import AttemptError

            detail = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            raise AttemptError(f"{route.role} model {route.alias!r} failed (fatal): {detail}", kind="fatal",
                               role=route.role, alias=route.alias, detail=detail) from exc
        raw_calls = message.get("tool_calls") or []
        calls = [{"id": c.get("id") or f"call_{i}", "type": "function",
                  "function": {"name": c["function"].get("name") or "",
                               "arguments": c["function"].get("arguments") or ""}}
                 for i, c in enumerate(raw_calls)]
        prompt_chars = sum(len(m.get("content") or "") for m in messages)
        out_chars = len(message.get("content") or "") + len(json.dumps(raw_calls))  # as SimProvider counts
        return ModelReply(content=message.get("content"), tool_calls=calls,
                          reasoning=message.get("reasoning_content"),
                          finish_reason="tool_calls" if calls else "stop",
                          usage=Usage(calls=1, prompt_tokens=prompt_chars // 4, completion_tokens=out_chars // 4),
                          latency_s=latency + time.perf_counter() - started)


SIM_TRANSPORT = SimTransport()
