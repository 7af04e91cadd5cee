"""Retries by error class, for tenacity: how many, how long to wait, and when to give up.

429 honours Retry-After; server errors, timeouts and connection errors back off exponentially
with jitter; every class has its own bounded count, and all of them share one deadline per call.
Anything else (400, 401, 403, 404, context overflow, content filter, a broken install) is final.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from awm_runtime import _events
from awm_runtime._errors import ModelError
from awm_runtime.models._exceptions import RETRYABLE, AttemptError

if TYPE_CHECKING:
    from tenacity import RetryCallState

    from awm_runtime.models._registry import ModelConfig

# Retries (not attempts) per class. 429s get the most: a burst is the provider asking for patience.
DEFAULT_RETRIES: Mapping[str, int] = {"rate_limit": 8, "server": 4, "timeout": 2, "connection": 4}
MAX_BACKOFF_S = 30.0
MAX_RETRY_AFTER_S = 120.0  # a provider asking for longer than this is down; the deadline decides


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    retries: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_RETRIES))
    deadline_s: float = 300.0
    backoff_s: float = 0.5

    @classmethod
    def of(cls, config: ModelConfig) -> RetryPolicy:
        retries = dict(DEFAULT_RETRIES)
        if config.max_retries is not None:
            retries = dict.fromkeys(RETRYABLE, config.max_retries)
        retries.update(config.retries)
        deadline = config.retry_deadline_s or max(300.0, 2 * config.timeout_s)
        return cls(retries=retries, deadline_s=deadline, backoff_s=config.backoff_s)


class CallRetries:
    """The retry state of one call: tenacity's `retry`, `wait`, `stop` and `before_sleep` hooks."""

    __slots__ = ("counts", "endpoint", "gave_up", "policy", "queued_s", "started")

    def __init__(self, policy: RetryPolicy, endpoint: str) -> None:
        self.policy = policy
        self.endpoint = endpoint
        self.counts: dict[str, int] = {}
        self.started = time.monotonic()
        self.queued_s = 0.0  # time spent waiting for a slot in our own endpoint limiter: not the call's
        self.gave_up = ""

    def remaining_s(self) -> float:
        """What is left of the deadline. It runs while an attempt is out and between attempts, never while
        the call waits behind our own endpoint limiter: that queue is the scheduler's business."""
        return self.policy.deadline_s - (time.monotonic() - self.started - self.queued_s)

    @staticmethod
    def _error(state: RetryCallState) -> AttemptError | None:
        exc = state.outcome.exception() if state.outcome is not None else None
        return exc if isinstance(exc, AttemptError) else None

    def retry(self, state: RetryCallState) -> bool:
        error = self._error(state)
        if error is None or error.kind not in RETRYABLE:
            return False
        self.counts[error.kind] = self.counts.get(error.kind, 0) + 1
        return True

    def wait(self, state: RetryCallState) -> float:
        error = self._error(state)
        assert error is not None
        n = self.counts[error.kind]
        if error.kind == "rate_limit" and error.retry_after_s is not None:
            # At least what the provider asked for, plus a little spread so the herd does not return at once.
            return min(error.retry_after_s, MAX_RETRY_AFTER_S) * (1.0 + 0.2 * random.random())
        return min(MAX_BACKOFF_S, self.policy.backoff_s * 2 ** (n - 1)) * (0.5 + random.random())

    def stop(self, state: RetryCallState) -> bool:
        error = self._error(state)
        assert error is not None
        n = self.counts[error.kind]
        if n > self.policy.retries.get(error.kind, 0):
            self.gave_up = f"after {state.attempt_number} attempts"
        elif self.remaining_s() - (state.upcoming_sleep or 0.0) <= 0:
            self.gave_up = (f"retry deadline of {self.policy.deadline_s:g}s reached "
                            f"after {state.attempt_number} attempts")
        return bool(self.gave_up)

    def before_sleep(self, state: RetryCallState) -> None:
        error = self._error(state)
        if error is not None:
            _events.model_retry(role=error.role, alias=error.alias, endpoint=self.endpoint, kind=error.kind,
                                attempt=state.attempt_number, wait_s=state.upcoming_sleep or 0.0, error=error.detail)

    def final(self, error: AttemptError, attempts: int) -> ModelError:
        """The error the episode records: its class, and how many attempts were spent on it."""
        why = self.gave_up or (f"after {attempts} attempts" if attempts > 1 else "")
        message = f"{error.role} model {error.alias!r} failed ({error.kind}){' ' + why if why else ''}: {error.detail}"
        _events.model_failed(role=error.role, alias=error.alias, endpoint=self.endpoint, kind=error.kind,
                             attempts=attempts, elapsed_s=self.policy.deadline_s - self.remaining_s(),
                             error=error.detail)
        return ModelError(message, kind=error.kind, role=error.role, alias=error.alias)


def tenacity_kwargs(retries: CallRetries, sleep: Any) -> dict[str, Any]:
    return {"retry": retries.retry, "wait": retries.wait, "stop": retries.stop, "sleep": sleep,
            "before_sleep": retries.before_sleep, "reraise": False}
