"""`--until-decided`: watch finished pairs, ask the run's StoppingRule, keep the episode and USD budgets.

The scheduler does no statistics: a pair (every arm's record of one task, repeat and seed) goes to
the rule, and a reason coming back stops the run like a Ctrl-C would (in-flight episodes get the
grace period), except that the run is not *interrupted*: it ended as planned.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from awm_runtime._errors import ConfigError
from awm_runtime._interfaces import StoppingRule
from awm_runtime._types import EpisodeRecord
from awm_runtime._units import Unit
from awm_runtime.report import RunStats, priced, summary_fields
from awm_runtime.scheduler._control import RunControl

PairKey = tuple[str, int, int, int]


class PairWatch:
    """Groups records into pairs for the rule; tracks the budgets; remembers why the run stopped."""

    def __init__(self, arms: Sequence[str], rule: StoppingRule, control: RunControl, *,
                 max_episodes: int | None = None, max_usd: float | None = None) -> None:
        self.arms = list(arms)
        self.rule = rule
        self.control = control
        self.max_episodes = max_episodes
        self.max_usd = max_usd
        self.cost_usd = 0.0
        self.cost_known = True  # False once a call had no price: the cost is then unknown, never $0
        self.pending: dict[PairKey, dict[str, dict[str, Any]]] = {}
        self.reason: str | None = None  # set once: the decision or the budget that ended the run
        self.started = 0  # episodes handed to the pool by `capped`

    def observe(self, r: dict[str, Any]) -> None:
        usage = (r.get("usage") or {}).items()
        for _, u in usage:
            self.cost_usd += float(u.get("cost_usd") or 0.0)
            self.cost_known = self.cost_known and (not int(u.get("calls") or 0) or priced(u))
        unknown = sorted(role for role, u in usage if role in ("policy", "expert") and u.get("cost_known") is False)
        if self.reason is None and self.max_usd is not None and unknown:  # priced at start: invalid usage since
            self.stop(f"max-usd budget cannot be kept: a {unknown[0]} call's cost is unknown (its provider "
                      "reported invalid usage): not decided")
        key = (str(r["scenario"]), int(r["task_idx"]), int(r["repeat"]), int(r.get("seed") or 0))
        cell = self.pending.setdefault(key, {})
        cell[str(r["arm"])] = r
        if self.reason is None and all(a in cell for a in self.arms):
            del self.pending[key]
            why = self.rule.pair_finished([cell[a] for a in self.arms])
            if why:
                self.stop(why)
        if self.reason is None and self.max_usd is not None and self.cost_usd >= self.max_usd:
            self.stop(f"max-usd budget of ${self.max_usd:g} spent (${self.cost_usd:.4f}): not decided")

    def stop(self, reason: str) -> None:
        self.reason = reason
        self.control.stop(reason)

    def capped(self, units: Iterator[Unit], already: int) -> Iterator[Unit]:
        """The units while the episode budget lasts (episodes already recorded count against it)."""
        for unit in units:
            if self.reason is not None:
                return
            if self.max_episodes is not None and already + self.started + len(unit.keys) > self.max_episodes:
                self.reason = f"max-episodes budget of {self.max_episodes} spent: not decided"
                return
            self.started += len(unit.keys)
            yield unit

    def summary(self, exhausted: bool) -> dict[str, Any]:
        """summary.json's `sequential`: why the run stopped, and the rule's state (e-value, interval)."""
        reason = self.reason or ("the plan ran out: not decided" if exhausted else
                                 f"stopped ({self.control.reason}): not decided")
        return {"stop_reason": reason, "max_episodes": self.max_episodes, "max_usd": self.max_usd,
                "cost_usd": round(self.cost_usd, 6) if self.cost_known else None, "cost_known": self.cost_known,
                **self.rule.state()}


class WatchedStats(RunStats):
    """The run's running statistics, which also hand every record to a PairWatch: the one place
    both the in-process and the sharded paths record through."""

    def __init__(self, arm_order: Sequence[str], watch: PairWatch) -> None:
        super().__init__(arm_order)
        self.watch = watch

    def add(self, record: EpisodeRecord | dict[str, Any]) -> None:
        r = record if isinstance(record, dict) else summary_fields(record)
        super().add(r)
        self.watch.observe(r)


def endpoint_totals(stats: Sequence[Any]) -> list[dict[str, Any]]:
    """summary.json's `endpoints`: calls, failed attempts, retries and 429s per model endpoint (this
    session of the run: a resumed run counts from its resume)."""
    return [{"endpoint": s.endpoint, "roles": list(s.roles), "calls": s.calls, "failed_attempts": s.errors,
             "retries": s.retries, "rate_limited": s.rate_limited,
             "failed_per_100_calls": round(100 * s.errors / s.calls, 2) if s.calls else None} for s in stats]


def require_prices(prep: Any) -> None:
    """`--max-usd` needs a price for every policy and expert model the arms call: a budget counted in
    unknown dollars would never run out."""
    unknown = sorted(f"{role} {alias}" for (role, alias), client in prep.ctx.clients.items()
                     if role in ("policy", "expert") and client.prices.source == "unknown")
    if unknown:
        raise ConfigError(f"--max-usd: no price for {', '.join(unknown)}; set input_cost_per_mtok and "
                          "output_cost_per_mtok for it in awm.toml, or drop --max-usd")
