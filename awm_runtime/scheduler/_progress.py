"""Live run state for the live view and the heartbeat events: counts, running stats, endpoints."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from awm_runtime.models import EndpointStats, endpoint_stats
from awm_runtime.report import RunStats


def merge_endpoints(snapshots: list[list[dict[str, Any]]]) -> list[EndpointStats]:
    """Sum per-endpoint counters reported by several processes (shards)."""
    merged: dict[str, dict[str, Any]] = {}
    for snap in snapshots:
        for e in snap:
            m = merged.setdefault(e["endpoint"], {"endpoint": e["endpoint"], "roles": set(), "limit": 0,
                                                  "in_flight": 0, "in_backoff": 0, "calls": 0, "errors": 0})
            m["roles"].update(e["roles"])
            for k in ("limit", "in_flight", "in_backoff", "calls", "errors"):
                m[k] += e[k]
    return [EndpointStats(m["endpoint"], tuple(sorted(m["roles"])), m["limit"], m["in_flight"], m["in_backoff"],
                          m["calls"], m["errors"]) for m in merged.values()]


def endpoint_dicts(stats: list[EndpointStats]) -> list[dict[str, Any]]:
    return [{"endpoint": s.endpoint, "roles": list(s.roles), "limit": s.limit, "in_flight": s.in_flight,
             "in_backoff": s.in_backoff, "calls": s.calls, "errors": s.errors} for s in stats]


MAX_WARNINGS = 20
_NOT_SAID = ("event", "level", "timestamp", "shard")


@dataclass(slots=True)
class RunProgress:
    """What a run has done so far. The scheduler writes it; the live view only reads it."""

    planned: int = 0
    already_done: int = 0
    recorded: int = 0
    cancelled: int = 0
    lost: int = 0  # episodes whose process died (a Ray node or actor): not recorded, --resume runs them
    in_flight: int = 0
    shards: int = 1
    where: str = ""  # where episodes run when not in this process, e.g. "Ray: 4 actors on 2 nodes"
    stopping: bool = False
    stats: RunStats = field(default_factory=RunStats)
    started: float = field(default_factory=time.monotonic)
    endpoints: Callable[[], list[EndpointStats]] = endpoint_stats
    # The first warning of each kind the run logged, as one line (events.jsonl has them all): the CLI shows them.
    warnings: dict[str, str] = field(default_factory=dict)
    last_warning: str = ""  # the latest kept, for the live view (which reads it from another thread)

    def warn(self, event: Mapping[str, Any]) -> None:
        """Keep `event` (a structlog event dict) if it is the first of its kind; at most MAX_WARNINGS kinds."""
        name = str(event.get("event", "warning"))
        if name in self.warnings or len(self.warnings) >= MAX_WARNINGS:
            return
        fields = {k: v for k, v in event.items() if k not in _NOT_SAID}
        note = fields.pop("note", None)
        said = " ".join(f"{k}={v}" for k, v in fields.items())
        self.warnings[name] = self.last_warning = f"{name}: {said}{'; ' if said and note else ''}{note or ''}"

    @property
    def finished(self) -> int:
        return self.already_done + self.recorded

    def totals(self) -> dict[str, Any]:
        """Across arms: what the live view shows under the bar."""
        out: dict[str, Any] = {"episodes": 0, "scored": 0, "complete": 0, "errors": 0, "format_errors": 0,
                               "expert_calls": 0, "tokens": 0, "cost_usd": 0.0, "cost_known": True}
        for a in self.stats.arms.values():
            out["episodes"] += a.episodes
            out["scored"] += a.accountable
            out["complete"] += a.outcomes["complete"]
            out["errors"] += a.outcomes["error"]
            out["format_errors"] += sum(a.format_errors.values())
            out["expert_calls"] += a.expert_calls
            out["tokens"] += sum(a.tokens.values())
            out["cost_usd"] += a.cost_usd
            out["cost_known"] = out["cost_known"] and not a.economics.unpriced  # a call without a price: unknown
        return out
