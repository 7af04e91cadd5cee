"""Reward shapers: awm, openenv, try-first and advice-cost. Tables live in one place: here.

A table is keyed by what happened: the outcome when it says everything (`complete`,
`format_error`, `error`), else the verifier's own word (`incomplete`, `others`, ...), or for an
episode the verifier did not judge, its end_reason (`timeout`, `context_overflow`,
`content_filter`, `verifier_raised`). A key missing from a table scores 0.0 ("everything else 0").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from awm_runtime._interfaces import RewardShaper
from awm_runtime._types import EpisodeRecord

# BRIEF §3. awm: complete 1.0, incomplete 0.1, agent or world error 0.0, a format violation -1.
# Code-mode verifiers only say complete/others, so "others" is AWM's incomplete. Infrastructure
# errors are never the agent's fault: 0.0, and reports drop them (`outcome: error`). Running out of
# time or context is running out of budget, like the turn limit (then "others", 0.1); breaking the DB
# so that its verifier raises is the agent's own error (0.0, as agent_error).
AWM_TABLE: dict[str, float] = {"complete": 1.0, "incomplete": 0.1, "others": 0.1, "agent_error": 0.0,
                               "format_error": -1.0, "error": 0.0, "no_verifier": 0.0, "timeout": 0.1,
                               "context_overflow": 0.1, "content_filter": 0.1, "verifier_raised": 0.0}
# OpenEnv's AWM server keys its reward on the verifier's raw result type: complete 1.0,
# incomplete 0.1, format_error -1.0, everything else 0 — so a code-mode "others" scores 0.0 there.
OPENENV_TABLE: dict[str, float] = {"complete": 1.0, "incomplete": 0.1, "format_error": -1.0}
# The seeds' try-first hierarchy for completions; anything else is scored by the awm table.
TRY_FIRST_TABLE: dict[str, float] = {"solo": 2.0, "recovery": 1.3, "blind": 0.8, "incomplete": 0.1,
                                     "format_error": -1.0, "error": 0.0}


def table_key(record: EpisodeRecord) -> str:
    """What a table is indexed by: the outcome, or for an unfinished task the verifier's result, or
    (when the verifier did not judge it) why the episode ended."""
    if record.outcome in ("complete", "format_error", "error"):
        return record.outcome
    if record.verdict in ("not_run", "verifier_raised") and record.end_reason is not None:
        return record.end_reason
    return record.verdict


@dataclass(frozen=True, slots=True)
class TableShaper:
    """Reward by outcome and verdict from one table (awm, openenv, or a plug-in's own)."""

    name: str
    table: Mapping[str, float] = field(default_factory=lambda: dict(AWM_TABLE))

    def shape(self, record: EpisodeRecord) -> tuple[float, dict[str, Any]]:
        key = table_key(record)
        value = float(self.table.get(key, 0.0))
        return value, {"table": self.name, "key": key, "outcome": record.outcome, "verdict": record.verdict,
                       "base": value}


@dataclass(frozen=True, slots=True)
class TryFirst:
    """Solo completion 2.0 > recovery (trouble, then ask) 1.3 > blind ask 0.8 > incomplete 0.1 > format -1."""

    name: str = "try-first"

    def shape(self, record: EpisodeRecord) -> tuple[float, dict[str, Any]]:
        key: str
        if record.outcome == "complete":
            key, value = record.ask_style, TRY_FIRST_TABLE[record.ask_style]
        else:
            key = table_key(record)
            value = TRY_FIRST_TABLE.get(key, AWM_TABLE.get(key, 0.0))
        return value, {"table": self.name, "key": key, "outcome": record.outcome, "verdict": record.verdict,
                       "ask_style": record.ask_style, "base": value}


@dataclass(frozen=True, slots=True)
class AdviceCost:
    """AGILE-style: the inner shaper's reward minus `cost` per expert call (not for infrastructure errors)."""

    inner: RewardShaper
    cost: float = 0.1
    name: str = "advice-cost"

    def shape(self, record: EpisodeRecord) -> tuple[float, dict[str, Any]]:
        base, parts = self.inner.shape(record)
        penalty = self.cost * record.expert_calls if record.outcome != "error" else 0.0
        return base - penalty, {**parts, "inner": self.inner.name, "expert_calls": record.expert_calls,
                                "advice_cost_per_call": self.cost, "advice_penalty": -penalty}


def awm(arg: str = "") -> RewardShaper:
    return TableShaper("awm", dict(AWM_TABLE))


def openenv(arg: str = "") -> RewardShaper:
    return TableShaper("openenv", dict(OPENENV_TABLE))


def try_first(arg: str = "") -> RewardShaper:
    return TryFirst()


_INNER = {"awm": awm, "openenv": openenv, "try-first": try_first}


def advice_cost(arg: str = "") -> RewardShaper:
    """`advice-cost`, `advice-cost:0.2` (cost per call, over awm) or `advice-cost:0.2:try-first`."""
    cost_text, _, inner = arg.partition(":")
    try:
        cost = float(cost_text) if cost_text else 0.1
    except ValueError:
        raise ValueError(f"the cost per expert call must be a number, got {cost_text!r}") from None
    if cost < 0:
        raise ValueError(f"the cost per expert call must be >= 0, got {cost}")
    if (inner or "awm") not in _INNER:
        raise ValueError(f"the inner table must be one of {', '.join(_INNER)}, got {inner!r}")
    return AdviceCost(inner=_INNER[inner or "awm"](), cost=cost)
