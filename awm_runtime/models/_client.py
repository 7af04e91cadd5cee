"""ModelClient: one role's calls to one alias, under its endpoint's limits, retried by error class."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tenacity import AsyncRetrying, RetryError

from awm_runtime import _events
from awm_runtime._errors import ModelError
from awm_runtime._log import get_logger
from awm_runtime._slices import loop_slice
from awm_runtime._types import ModelRole
from awm_runtime.models._exceptions import AttemptError
from awm_runtime.models._limits import EndpointLimiter, limiter_for
from awm_runtime.models._pricing import Prices, prices_for
from awm_runtime.models._registry import ModelConfig
from awm_runtime.models._reply import ModelReply
from awm_runtime.models._retry import CallRetries, RetryPolicy, tenacity_kwargs
from awm_runtime.models._route import Route, Transport
from awm_runtime.models._transport import transport_for

log = get_logger("awm_runtime.models")

# Our own timer on top of litellm's, so a call that ignores its timeout still ends.
_TIMEOUT_GRACE_S = 5.0


def estimate_tokens(messages: list[dict[str, Any]], params: dict[str, Any]) -> int:
    """A cheap upper-ish guess for tpm budgets (4 characters a token, plus the completion cap)."""
    chars = sum(len(m.get("content") or "") if isinstance(m.get("content"), str) else 200 for m in messages)
    return chars // 4 + int(params.get("max_tokens") or params.get("max_completion_tokens") or 256)


class ModelClient:
    """Calls one alias on behalf of one role (policy, expert or judge)."""

    def __init__(self, config: ModelConfig, role: ModelRole, *, transport: Transport | None = None) -> None:
        self.role = role
        self._use(config)
        self.retry_policy = RetryPolicy.of(config)
        self._transport = transport  # resolved at the first call, so model-call processes started after us are used
        self.prices: Prices = prices_for(config)  # now, at build time: never a file read mid-run
        self.usage_problems = 0  # replies whose usage the provider got wrong (warned about once)

    def _use(self, config: ModelConfig) -> None:
        self.config = config
        self.route = Route(self.role, config.alias, config.model, config.api_base, config.api_key_env)
        self._limiter = limiter_for(config.endpoint, config.api_key_env, config.max_concurrency, self.role,
                                    rpm=config.rpm, tpm=config.tpm)

    @property
    def limiter(self) -> EndpointLimiter:
        """The limiter of this client's endpoint (shared with every client of the same endpoint and key)."""
        return self._limiter

    def bind(self, api_base: str) -> None:
        """Point a local alias's client at the server started for it (models/_local.py), before any call."""
        self._use(self.config.model_copy(update={"api_base": api_base}))

    async def complete(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                       params: dict[str, Any] | None = None) -> ModelReply:
        """One completion, retried by error class. Raises ModelError when it fails for good."""
        if self.config.needs_local_server:  # never let an unbound local alias fall through to a hosted API
            raise ModelError(f"{self.role} model {self.config.alias!r}: its local server was not started",
                             kind="fatal", role=self.role, alias=self.config.alias)
        call_params: dict[str, Any] = {**self.config.params, **(params or {})}
        if tools:
            call_params["tools"] = tools
        retries = CallRetries(self.retry_policy, self._limiter.endpoint)
        try:  # the first attempt runs bare: tenacity's machinery costs ~0.1 ms a call, and most calls need none
            reply = await self._attempt(messages, call_params, retries)
            attempts = 1
        except AttemptError as first:
            reply, attempts = await self._retried(first, messages, call_params, retries)
        await loop_slice()  # replies land together: what follows takes its turn (awm_runtime/_slices.py)
        reply.usage.cost_usd = self.prices.cost(reply.usage.prompt_tokens, reply.usage.completion_tokens)
        reply.usage.cost_known = self.prices.source != "unknown"
        if reply.usage_problem:
            self._bad_usage(reply)
        reply.usage.latency_s = [round(reply.latency_s, 4)]
        reply.usage.retries = attempts - 1
        _events.model_called(role=self.role, alias=self.config.alias, endpoint=self._limiter.endpoint,
                             latency_s=reply.latency_s, prompt_tokens=reply.usage.prompt_tokens,
                             completion_tokens=reply.usage.completion_tokens, attempt=attempts)
        return reply

    def _bad_usage(self, reply: ModelReply) -> None:
        """The provider's usage was invalid: its tokens count as none and its cost is unknown, never priced
        (a negative count would otherwise lower the run's spend under --max-usd). Said once per alias."""
        reply.usage.cost_usd = 0.0
        reply.usage.cost_known = False
        self.usage_problems += 1
        if self.usage_problems == 1:
            log.warning("provider_usage_invalid", role=self.role, alias=self.config.alias,
                        endpoint=self._limiter.endpoint, problem=reply.usage_problem,
                        effect="the provider's error: this call's tokens are not counted and its cost is unknown "
                               "(said once for this alias)")

    async def _retried(self, first: AttemptError, messages: list[dict[str, Any]], params: dict[str, Any],
                       retries: CallRetries) -> tuple[ModelReply, int]:
        """The call after its first attempt failed with `first`: tenacity takes over, and sees that failure
        as its own attempt 1, so the counts, waits, deadline and events are those of a call retried from the start."""
        pending = [first]

        async def attempt() -> ModelReply:
            if pending:
                raise pending.pop()
            return await self._attempt(messages, params, retries)

        retrying = AsyncRetrying(**tenacity_kwargs(retries, self._limiter.sleep_backoff))
        try:
            reply: ModelReply = await retrying(attempt)
        except RetryError as exc:
            last = exc.last_attempt.exception()
            assert isinstance(last, AttemptError)
            raise retries.final(last, exc.last_attempt.attempt_number) from last.__cause__
        except AttemptError as exc:
            raise retries.final(exc, retrying.statistics.get("attempt_number", 1)) from exc.__cause__
        return reply, int(retrying.statistics.get("attempt_number", 1))

    async def _attempt(self, messages: list[dict[str, Any]], params: dict[str, Any],
                       retries: CallRetries) -> ModelReply:
        estimate = estimate_tokens(messages, params) if self._limiter.tpm else 0
        asked = time.monotonic()
        async with self._limiter.slot(estimate) as slot:
            retries.queued_s += time.monotonic() - asked  # the deadline starts when the attempt is sent
            # The last attempt gets what is left of the deadline, never more than the alias's timeout. Whole
            # seconds: litellm caches its HTTP clients by timeout, and a new client per call costs ~1 ms.
            remaining = retries.remaining_s()
            timeout_s = self.config.timeout_s if remaining >= self.config.timeout_s else max(1.0, float(int(remaining)))
            try:
                async with asyncio.timeout(timeout_s + _TIMEOUT_GRACE_S):
                    reply = await self.transport.attempt(self.route, messages, params, timeout_s)
            except AttemptError as exc:
                slot.failed(exc.kind)
                raise
            except TimeoutError as exc:
                slot.failed("timeout")
                raise AttemptError(f"{self.role} model {self.config.alias!r} failed (timeout): no answer in "
                                   f"{timeout_s:g}s", kind="timeout", role=self.role, alias=self.config.alias,
                                   detail=f"no answer in {timeout_s:g}s") from exc
            slot.succeeded(reply.usage.prompt_tokens, reply.usage.completion_tokens)
            return reply

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            self._transport = transport_for(self.config.model, self.config.api_base, self.config.transport,
                                            tito=self.config.tito)
        return self._transport


__all__ = ["ModelClient", "ModelError", "ModelReply", "estimate_tokens"]
