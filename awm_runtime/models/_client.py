"""ModelClient: one role's calls to one alias through litellm, with retries by error class."""

from __future__ import annotations

import asyncio
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any

from awm_runtime import _events
from awm_runtime._errors import ModelError
from awm_runtime._types import Usage
from awm_runtime.models._exceptions import RETRYABLE, retry_after_s, to_model_error
from awm_runtime.models._limits import limiter_for
from awm_runtime.models._litellm import litellm
from awm_runtime.models._registry import ModelConfig

# Attempts per error class; a class not listed is not retried (400s, auth, context overflow, ...).
DEFAULT_ATTEMPTS = {"rate_limit": 6, "server": 4, "timeout": 3, "connection": 4}


@dataclass(slots=True)
class ModelReply:
    """A completion, reduced to what the runtime uses. `tool_calls` keep raw JSON argument strings."""

    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    reasoning: str | None = None
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    logprobs: list[Any] | None = None
    token_ids: list[int] | None = None


class ModelClient:
    """Calls one alias on behalf of one role (policy, expert or judge)."""

    def __init__(self, config: ModelConfig, role: str) -> None:
        self.config = config
        self.role = role
        self._limiter = limiter_for(config.endpoint, config.api_key_env, config.max_concurrency, role)

    def _api_key(self) -> str | None:
        return os.environ.get(self.config.api_key_env) if self.config.api_key_env else None

    def _secrets(self) -> tuple[str, ...]:
        key = self._api_key()
        return (key,) if key else ()

    async def complete(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                       params: dict[str, Any] | None = None) -> ModelReply:
        call_params: dict[str, Any] = {**self.config.params, **(params or {})}
        if tools:
            call_params["tools"] = tools
        attempts: dict[str, int] = {}
        deadline = time.monotonic() + self.config.timeout_s * 4
        total = 0
        while True:
            total += 1
            try:
                async with self._limiter.slot():
                    reply = await self._once(messages, call_params)
                _events.model_called(role=self.role, alias=self.config.alias, endpoint=self.config.endpoint,
                                     latency_s=reply.latency_s, prompt_tokens=reply.usage.prompt_tokens,
                                     completion_tokens=reply.usage.completion_tokens, attempt=total)
                return reply
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._limiter.errors += 1
                error = to_model_error(exc, role=self.role, alias=self.config.alias,
                                       secrets=self._secrets(), attempts=total)
                attempts[error.kind] = attempts.get(error.kind, 0) + 1
                limit = DEFAULT_ATTEMPTS.get(error.kind, 1) if self.config.max_retries is None \
                    else (self.config.max_retries + 1 if error.kind in RETRYABLE else 1)
                if attempts[error.kind] >= limit:
                    self._event_failed(error, total, deadline)
                    raise error from exc
                wait = retry_after_s(exc) if error.kind == "rate_limit" else None
                if wait is None:
                    wait = min(30.0, 0.5 * 2 ** (attempts[error.kind] - 1)) * (0.5 + random.random())
                if time.monotonic() + wait > deadline:
                    self._event_failed(error, total, deadline)
                    raise ModelError(f"{error} (retry deadline reached)", kind=error.kind,
                                     role=self.role, alias=self.config.alias) from exc
                _events.model_retry(role=self.role, alias=self.config.alias, endpoint=self.config.endpoint,
                                    kind=error.kind, attempt=total, wait_s=wait, error=str(error))
                async with self._limiter.backoff():
                    await asyncio.sleep(wait)

    def _event_failed(self, error: ModelError, attempts: int, deadline: float) -> None:
        elapsed = time.monotonic() - (deadline - self.config.timeout_s * 4)
        _events.model_failed(role=self.role, alias=self.config.alias, endpoint=self.config.endpoint,
                             kind=error.kind, attempts=attempts, elapsed_s=elapsed, error=str(error))

    async def _once(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> ModelReply:
        started = time.perf_counter()
        response = await litellm().acompletion(
            model=self.config.model, messages=messages, api_base=self.config.api_base,
            api_key=self._api_key(), timeout=self.config.timeout_s, num_retries=0, **params,
        )
        return self._reply(response, time.perf_counter() - started)

    def _reply(self, response: Any, latency_s: float) -> ModelReply:
        choice = response.choices[0]
        message = choice.message
        tool_calls = [
            {"id": tc.id or f"call_{i}", "type": "function",
             "function": {"name": tc.function.name or "", "arguments": tc.function.arguments or ""}}
            for i, tc in enumerate(getattr(message, "tool_calls", None) or [])
        ]
        raw_usage = getattr(response, "usage", None)
        prompt = int(getattr(raw_usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(raw_usage, "completion_tokens", 0) or 0)
        return ModelReply(
            content=message.content,
            tool_calls=tool_calls,
            reasoning=getattr(message, "reasoning_content", None),
            finish_reason=choice.finish_reason,
            usage=Usage(calls=1, prompt_tokens=prompt, completion_tokens=completion,
                        cost_usd=self._cost(prompt, completion)),
            latency_s=latency_s,
        )

    def _cost(self, prompt: int, completion: int) -> float:
        c = self.config
        if c.input_cost_per_mtok is None and c.output_cost_per_mtok is None:
            return 0.0
        return (prompt * (c.input_cost_per_mtok or 0.0) + completion * (c.output_cost_per_mtok or 0.0)) / 1e6
