"""The litellm side of the simulations: imported only by `models._litellm`, after litellm itself."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from litellm import CustomLLM, ModelResponse

from awm_runtime.models.sim import simulate


class SimProvider(CustomLLM):  # type: ignore[misc]
    """litellm custom provider: `litellm.acompletion(model="sim/novice", ...)` lands here."""

    async def acompletion(self, model: str, messages: list[dict[str, Any]], *args: Any,
                          optional_params: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        params = dict(optional_params or {})
        latency = float((params.get("sim") or {}).get("latency_s", 0.0))
        if latency > 0:
            await asyncio.sleep(latency)
        message = simulate(model, messages, params)
        prompt_chars = sum(len(m.get("content") or "") for m in messages)
        out_chars = len(message.get("content") or "") + len(json.dumps(message.get("tool_calls") or []))
        return ModelResponse(
            model=model,
            choices=[{"index": 0, "message": message,
                      "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            usage={"prompt_tokens": prompt_chars // 4, "completion_tokens": out_chars // 4,
                   "total_tokens": (prompt_chars + out_chars) // 4},
        )
