"""Provider economics per arm: cost per completed task, tokens per episode, latencies, retries, model errors.

Built record by record in fixed memory: latencies go into log-spaced buckets 2% wide, so a p50 or
p95 is within 2% of the exact order statistic however many calls a run makes. A cost is only a
number when every call of the arm had a price (awm.toml's or litellm's); otherwise it is unknown,
never $0.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

RATIO = 1.02  # bucket width: consecutive edges differ by 2%
LOW_S = 1e-4  # the first bucket holds everything faster than 0.1 ms
BUCKETS = int(math.log(1e5 / LOW_S) / math.log(RATIO)) + 2  # up to ~28 hours


@dataclass(slots=True)
class LogHistogram:
    """Durations in log-spaced buckets: quantiles within 2% in fixed memory."""

    counts: Counter[int] = field(default_factory=Counter)
    n: int = 0
    total: float = 0.0

    def add(self, seconds: float) -> None:
        i = 0 if seconds <= LOW_S else min(BUCKETS - 1, 1 + int(math.log(seconds / LOW_S) / math.log(RATIO)))
        self.counts[i] += 1
        self.n += 1
        self.total += seconds

    def quantile(self, q: float) -> float | None:
        """The geometric middle of the bucket holding the q-quantile (None without values)."""
        if not self.n:
            return None
        need, seen = q * self.n, 0
        for i in sorted(self.counts):
            seen += self.counts[i]
            if seen >= need:
                return LOW_S if i == 0 else LOW_S * RATIO ** (i - 0.5)
        return None

    def to_dict(self) -> dict[str, Any]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 4)

        return {"n": self.n, "p50_s": r(self.quantile(0.5)), "p95_s": r(self.quantile(0.95)),
                "mean_s": r(self.total / self.n) if self.n else None}


def priced(usage: dict[str, Any]) -> bool:
    """Whether a role's cost is known: the client says so; older records only when they show a cost."""
    known = usage.get("cost_known")
    return bool(known) if known is not None else float(usage.get("cost_usd") or 0.0) > 0


@dataclass(slots=True)
class Economics:
    """One arm's provider economics."""

    episodes: int = 0
    cost_usd: float = 0.0
    tokens: int = 0
    unpriced: Counter[str] = field(default_factory=Counter)  # role -> episodes with calls and no price
    calls: Counter[str] = field(default_factory=Counter)
    retries: Counter[str] = field(default_factory=Counter)
    latency: dict[str, LogHistogram] = field(default_factory=dict)
    wall: LogHistogram = field(default_factory=LogHistogram)
    model_errors: Counter[str] = field(default_factory=Counter)
    # Reasoning (issue 46): output tokens, the share of them spent reasoning, and the roles whose calls did not
    # report it (Anthropic's wire never does): then the arm's reasoning is unknown, never 0.
    output_tokens: int = 0
    reasoning_tokens: int = 0
    reasoning_unreported: Counter[str] = field(default_factory=Counter)

    def add(self, r: dict[str, Any]) -> None:
        self.episodes += 1
        for role, u in (r.get("usage") or {}).items():
            calls = int(u.get("calls") or 0)
            self.output_tokens += int(u.get("completion_tokens") or 0)
            if calls and u.get("reasoning_tokens") is None:
                self.reasoning_unreported[role] += 1
            self.reasoning_tokens += int(u.get("reasoning_tokens") or 0)
            self.calls[role] += calls
            self.retries[role] += int(u.get("retries") or 0)
            self.tokens += int(u.get("prompt_tokens") or 0) + int(u.get("completion_tokens") or 0)
            self.cost_usd += float(u.get("cost_usd") or 0.0)
            if calls and not priced(u):
                self.unpriced[role] += 1
            hist = self.latency.setdefault(role, LogHistogram())
            for s in u.get("latency_s") or ():
                hist.add(float(s))
        wall = (r.get("timings") or {}).get("wall_s")
        if wall is not None:
            self.wall.add(float(wall))
        error = r.get("error") or {}
        if str(error.get("class", "")).startswith("ModelError"):
            self.model_errors[str(error["class"]).partition(".")[2] or "?"] += 1

    def to_dict(self, complete: int, policy: dict[str, Any] | None, expert: dict[str, Any] | None) -> dict[str, Any]:
        """The summary's `economics` of the arm; `complete` is its number of completed episodes."""
        aliases = {"policy": (policy or {}).get("alias"), "expert": (expert or {}).get("alias")}
        unknown = [f"{role} {aliases.get(role) or '?'}" for role in sorted(self.unpriced)]
        known = not unknown
        cost = round(self.cost_usd, 6) if known else None
        if not known:
            per_task, note = None, f"unknown: no price for {', '.join(unknown)}"
        elif not complete:
            per_task, note = None, "n/a: no completed task"
        else:
            per_task, note = round(self.cost_usd / complete, 6), ""
        calls = {}
        for role in sorted(self.calls):
            if not self.calls[role]:
                continue
            n = self.calls[role]
            calls[role] = {"calls": n, "retries": self.retries[role],
                           "retries_per_100_calls": round(100 * self.retries[role] / n, 2),
                           "latency": self.latency.get(role, LogHistogram()).to_dict()}
        return {"cost_known": known, "cost_usd": cost, "usd_per_completed_task": per_task,
                "usd_per_episode": round(self.cost_usd / self.episodes, 6) if known and self.episodes else None,
                "cost_note": note, "tokens_per_episode": round(self.tokens / self.episodes, 1) if self.episodes
                else None, "model_calls": calls, "episode_wall": self.wall.to_dict(),
                "model_errors": sum(self.model_errors.values()), "model_errors_by_kind": dict(self.model_errors),
                **self._reasoning(aliases)}

    def _reasoning(self, aliases: dict[str, str | None]) -> dict[str, Any]:
        """Output and reasoning tokens per episode. Reasoning is billed as output and already inside it."""
        unreported = [f"{role} {aliases.get(role) or '?'}" for role in sorted(self.reasoning_unreported)]
        per = (lambda n: round(n / self.episodes, 1)) if self.episodes else (lambda n: None)
        return {"output_tokens_per_episode": per(self.output_tokens),
                "reasoning_tokens_per_episode": None if unreported else per(self.reasoning_tokens),
                "reasoning_note": f"not reported by {', '.join(unreported)}" if unreported else ""}
