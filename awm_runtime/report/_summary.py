"""Streaming run statistics per arm: built record by record, never holding the run in memory.

Rates and means are over the episodes the agent is accountable for (every outcome but `error`);
`strict_completion_rate` also counts infrastructure errors as failures. Totals (tokens, cost,
expert calls, format errors by kind) cover every episode.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from awm_runtime._types import EpisodeRecord
from awm_runtime.report._paired import PAIRED_METHOD, PairedStats


@dataclass(slots=True)
class ArmStats:
    arm: str
    policy: dict[str, Any] = field(default_factory=dict)
    expert: dict[str, Any] | None = None
    episodes: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    end_reasons: Counter[str] = field(default_factory=Counter)
    verdicts: Counter[str] = field(default_factory=Counter)
    format_errors: Counter[str] = field(default_factory=Counter)
    episodes_with_format_errors: int = 0
    ask_styles: Counter[str] = field(default_factory=Counter)
    successes_by_ask_style: Counter[str] = field(default_factory=Counter)  # complete episodes only
    expert_calls: int = 0
    nudges: int = 0
    nudges_followed: int = 0
    turns: int = 0
    reward_sum: float = 0.0
    tokens: Counter[str] = field(default_factory=Counter)
    cost_usd: float = 0.0
    error_classes: Counter[str] = field(default_factory=Counter)

    def add(self, r: dict[str, Any]) -> None:
        self.policy = r["policy"]
        self.expert = r.get("expert")
        self.episodes += 1
        accountable = r["outcome"] != "error"
        self.outcomes[r["outcome"]] += 1
        self.end_reasons[r.get("end_reason") or "unknown"] += 1  # runs from before end_reason: unknown
        self.verdicts[r["verdict"]] += 1
        fe = r.get("format_errors") or {}
        self.format_errors.update(fe)
        self.episodes_with_format_errors += accountable and bool(sum(fe.values()))
        self.ask_styles[r.get("ask_style", "solo")] += 1
        if r["outcome"] == "complete":
            self.successes_by_ask_style[r.get("ask_style", "solo")] += 1
        self.expert_calls += r.get("expert_calls", 0)
        self.nudges += r.get("nudges", 0)
        self.nudges_followed += sum(1 for n in r.get("nudge_log") or () if n.get("followed_by_ask"))
        if accountable:
            self.turns += r.get("turns", 0)
            self.reward_sum += float(r.get("reward", 0.0))
        for role, u in (r.get("usage") or {}).items():
            self.tokens[f"{role}_prompt"] += u.get("prompt_tokens", 0)
            self.tokens[f"{role}_completion"] += u.get("completion_tokens", 0)
            self.cost_usd += u.get("cost_usd", 0.0)
        if r.get("error"):
            self.error_classes[r["error"].get("class", "?")] += 1

    @property
    def accountable(self) -> int:
        """Episodes the agent is accountable for: infrastructure errors are excluded."""
        return self.episodes - self.outcomes["error"]

    @property
    def completion_rate(self) -> float:
        return self.outcomes["complete"] / self.accountable if self.accountable else 0.0

    def to_dict(self) -> dict[str, Any]:
        n = max(self.accountable, 1)
        return {
            "arm": self.arm, "policy": self.policy, "expert": self.expert, "episodes": self.episodes,
            "accountable_episodes": self.accountable, "infra_errors": self.outcomes["error"],
            "completion_rate": round(self.completion_rate, 4),
            "strict_completion_rate": round(self.outcomes["complete"] / max(self.episodes, 1), 4),
            "outcomes": dict(self.outcomes), "end_reasons": dict(self.end_reasons), "verdicts": dict(self.verdicts),
            "format_errors": dict(self.format_errors), "format_error_total": sum(self.format_errors.values()),
            "episodes_with_format_errors": self.episodes_with_format_errors,
            "format_error_rate": round(self.episodes_with_format_errors / n, 4),
            "ask_styles": dict(self.ask_styles), "successes_by_ask_style": dict(self.successes_by_ask_style),
            "expert_calls": self.expert_calls, "nudges": self.nudges,
            "nudges_followed_by_ask": self.nudges_followed, "mean_turns": round(self.turns / n, 3),
            "mean_reward": round(self.reward_sum / n, 4), "tokens": dict(self.tokens),
            "cost_usd": round(self.cost_usd, 6), "error_classes": dict(self.error_classes),
            "simulated": bool(self.policy.get("simulated")),
        }


class RunStats:
    """Per-arm aggregates, fed with record dicts (live or read back from episodes.jsonl)."""

    def __init__(self) -> None:
        self.arms: dict[str, ArmStats] = {}
        self.paired = PairedStats()

    def add(self, record: EpisodeRecord | dict[str, Any]) -> None:
        r = record if isinstance(record, dict) else summary_fields(record)
        self.arms.setdefault(r["arm"], ArmStats(r["arm"])).add(r)
        self.paired.add(r["arm"], r["scenario"], int(r["task_idx"]), int(r["repeat"]), r["outcome"],
                        float(r.get("reward", 0.0)))

    @property
    def episodes(self) -> int:
        return sum(a.episodes for a in self.arms.values())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"episodes": self.episodes,
                               "arms": {name: a.to_dict() for name, a in self.arms.items()}}
        if len(self.arms) > 1:
            out["paired"] = self.paired.to_list()
            out["paired_method"] = PAIRED_METHOD
        return out


def summary_fields(record: EpisodeRecord) -> dict[str, Any]:
    """The record's fields a summary needs, without dumping its messages."""
    return {
        "arm": record.arm, "scenario": record.scenario, "task_idx": record.task_idx, "repeat": record.repeat,
        "policy": record.policy.model_dump(), "expert": record.expert.model_dump()
        if record.expert else None, "outcome": record.outcome, "end_reason": record.end_reason,
        "verdict": record.verdict,
        "format_errors": record.format_errors, "ask_style": record.ask_style, "expert_calls": record.expert_calls,
        "nudges": record.nudges, "nudge_log": [n.model_dump() for n in record.nudge_log], "turns": record.turns,
        "reward": record.reward, "usage": {k: v.model_dump() for k, v in record.usage.items()},
        "error": record.error.model_dump(by_alias=True) if record.error else None,
    }
