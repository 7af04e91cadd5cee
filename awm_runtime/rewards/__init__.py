"""Reward shapers: awm, openenv, try-first and advice-cost. Tables live in one place: here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from awm_runtime._protocols import RewardShaper
from awm_runtime._types import EpisodeRecord

# BRIEF §3 tables. Infrastructure errors are never the agent's fault: they score 0 and are
# reported as `outcome: error`, so reports can drop them instead of counting a 0.
AWM_TABLE = {"complete": 1.0, "incomplete": 0.1, "format_error": -1.0, "error": 0.0}
OPENENV_TABLE = {"complete": 1.0, "incomplete": 0.1, "format_error": -1.0, "error": 0.0}
TRY_FIRST_TABLE = {"solo": 2.0, "recovery": 1.3, "blind": 0.8, "incomplete": 0.1, "format_error": -1.0,
                   "error": 0.0}


@dataclass(frozen=True, slots=True)
class TableShaper:
    """Reward by outcome. `awm`: agent or world error 0.0; a format violation ends at -1."""

    name: str
    table: dict[str, float] = field(default_factory=lambda: dict(AWM_TABLE))

    def shape(self, record: EpisodeRecord) -> tuple[float, dict[str, Any]]:
        value = self.table[record.outcome]
        return value, {"outcome": record.outcome, "base": value}


@dataclass(frozen=True, slots=True)
class TryFirst:
    """Solo completion 2.0 > recovery (error, then ask) 1.3 > blind ask 0.8 > incomplete 0.1."""

    name: str = "try-first"

    def shape(self, record: EpisodeRecord) -> tuple[float, dict[str, Any]]:
        t = TRY_FIRST_TABLE
        key = record.ask_style if record.outcome == "complete" else record.outcome
        return t[key], {"outcome": record.outcome, "ask_style": record.ask_style, "base": t[key]}


@dataclass(frozen=True, slots=True)
class AdviceCost:
    """AGILE-style: the inner shaper's reward minus `cost` per expert call."""

    inner: RewardShaper
    cost: float = 0.1
    name: str = "advice-cost"

    def shape(self, record: EpisodeRecord) -> tuple[float, dict[str, Any]]:
        base, parts = self.inner.shape(record)
        penalty = self.cost * record.expert_calls if record.outcome != "error" else 0.0
        return base - penalty, {**parts, "advice_penalty": -penalty, "advice_cost_per_call": self.cost}


def awm(arg: str = "") -> RewardShaper:
    return TableShaper("awm", dict(AWM_TABLE))


def openenv(arg: str = "") -> RewardShaper:
    return TableShaper("openenv", dict(OPENENV_TABLE))


def try_first(arg: str = "") -> RewardShaper:
    return TryFirst()


def advice_cost(arg: str = "") -> RewardShaper:
    """`advice-cost` or `advice-cost:0.2` (cost per call) over the try-first table."""
    return AdviceCost(inner=TryFirst(), cost=float(arg) if arg else 0.1)


__all__ = ["AWM_TABLE", "TRY_FIRST_TABLE", "AdviceCost", "TableShaper", "TryFirst", "advice_cost", "awm",
           "openenv", "try_first"]
