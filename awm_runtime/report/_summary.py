"""Streaming run statistics per arm: built record by record, never holding the run in memory.

Rates and means are over the episodes the agent is accountable for (every outcome but `error` and
`unverified`, which nothing judged); `strict_completion_rate` also counts infrastructure errors as failures;
a rate of 0 of 0 is None (`n/a`), never 0. Totals (tokens, cost, expert calls, format errors by kind) cover
every episode; `economics` (`_economics.py`) gives cost per completed task, tokens per episode and latencies.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from awm_runtime._types import EpisodeRecord
from awm_runtime.report._economics import Economics
from awm_runtime.report._forks import CheckpointStats, ForkStats
from awm_runtime.report._paired import PairedStats, paired_summary


@dataclass(slots=True)
class ArmStats:
    arm: str
    policy: dict[str, Any] = field(default_factory=dict)
    expert: dict[str, Any] | None = None  # the expert its episodes used (the first seen), None when none did
    experts_used: Counter[str] = field(default_factory=Counter)  # expert alias -> episodes that had it
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
    economics: Economics = field(default_factory=Economics)
    prefix: Counter[str] = field(default_factory=Counter)  # fork runs: the prefixes' expert calls and nudges
    # Episodes with a policy request that asked for reasoning without the state the provider needed (issue 46).
    reasoning_dropped: int = 0

    def add(self, r: dict[str, Any]) -> None:
        self.policy = r["policy"]
        expert = r.get("expert")
        if expert:  # a GRPO arm mixes members with and without the expert: the arm's expert is the one used
            self.expert = self.expert or expert
            self.experts_used[str(expert.get("alias") or expert.get("model") or "?")] += 1
        self.episodes += 1
        accountable = r["outcome"] not in ("error", "unverified")
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
        after = continuation_start(r)
        self.nudges_followed += sum(1 for n in r.get("nudge_log") or ()
                                    if n.get("followed_by_ask") and int(n.get("turn", 0)) > after)
        prefix = (r.get("fork") or {}).get("prefix")
        if isinstance(prefix, dict):  # a fork's prefix (the source episode before the fork point): apart
            self.prefix["episodes"] += 1
            self.prefix["expert_calls"] += int(prefix.get("expert_calls") or 0)
            self.prefix["nudges"] += int(prefix.get("nudges") or 0)
        if accountable:
            self.turns += r.get("turns", 0)
            self.reward_sum += float(r.get("reward", 0.0))
        for role, u in (r.get("usage") or {}).items():
            self.tokens[f"{role}_prompt"] += u.get("prompt_tokens", 0)
            self.tokens[f"{role}_completion"] += u.get("completion_tokens", 0)
            self.cost_usd += float(u.get("cost_usd") or 0.0)  # null: unknown (cost_known says so)
        if r.get("error"):
            self.error_classes[r["error"].get("class", "?")] += 1
        self.economics.add(r)
        self.reasoning_dropped += bool(r.get("reasoning_dropped")) or any(
            m.get("reasoning_dropped") for m in r.get("messages") or ())

    @property
    def accountable(self) -> int:
        """Episodes the agent is accountable for: infrastructure errors and unverified episodes are excluded."""
        return self.episodes - self.outcomes["error"] - self.outcomes["unverified"]

    @property
    def judge_unclassified_share(self) -> float | None:
        """Of the episodes the SQL judge classified or failed to, the share it left without a classification."""
        judged = sum(self.verdicts[v] for v in ("complete", "incomplete", "judge_unclassified"))
        return self.verdicts["judge_unclassified"] / judged if judged else None

    @property
    def completion_rate(self) -> float | None:
        """complete / accountable; None when no episode is accountable (0 of 0 is not 0%)."""
        return self.outcomes["complete"] / self.accountable if self.accountable else None

    def to_dict(self) -> dict[str, Any]:
        n = self.accountable
        judged = self.episodes - self.outcomes["unverified"]  # strict: infra errors count as failures

        def per(x: float, digits: int) -> float | None:
            return round(x / n, digits) if n else None

        economics = self.economics.to_dict(self.outcomes["complete"], self.policy, self.expert)

        return {
            "arm": self.arm, "policy": self.policy, "expert": self.expert,
            "expert_episodes": dict(self.experts_used), "episodes": self.episodes,
            "accountable_episodes": self.accountable, "infra_errors": self.outcomes["error"],
            "unverified": self.outcomes["unverified"],
            **({"judge_unclassified_share": round(self.judge_unclassified_share or 0.0, 4)}
               if self.verdicts["judge_unclassified"] else {}),
            **({"reasoning_dropped_episodes": self.reasoning_dropped} if self.reasoning_dropped else {}),
            "completion_rate": per(self.outcomes["complete"], 4),
            "strict_completion_rate": round(self.outcomes["complete"] / judged, 4) if judged else None,
            "outcomes": dict(self.outcomes), "end_reasons": dict(self.end_reasons), "verdicts": dict(self.verdicts),
            "format_errors": dict(self.format_errors), "format_error_total": sum(self.format_errors.values()),
            "episodes_with_format_errors": self.episodes_with_format_errors,
            "format_error_rate": per(self.episodes_with_format_errors, 4),
            "ask_styles": dict(self.ask_styles), "successes_by_ask_style": dict(self.successes_by_ask_style),
            "expert_calls": self.expert_calls, "nudges": self.nudges,
            "nudges_followed_by_ask": self.nudges_followed, "mean_turns": per(self.turns, 3),
            "mean_reward": per(self.reward_sum, 4), "tokens": dict(self.tokens),
            "cost_usd": economics["cost_usd"], "error_classes": dict(self.error_classes),  # None: unknown
            "simulated": bool(self.policy.get("simulated")),
            "economics": economics,
            **({"fork_prefix": dict(self.prefix)} if self.prefix else {}),
        }


class RunStats:
    """Per-arm aggregates, fed with record dicts (live or read back from episodes.jsonl).

    `arm_order` is the run's `--arm` order: tables list the arms so, and paired differences are the
    later arm minus the earlier one whatever order records arrive in. Without `pairs` (a live run of one arm,
    whose scheduler records each key once) no pair cell is kept: they grew with the run, for comparisons a run of
    one arm never makes (issue 49: with the scheduler's set of every key, 117 B an episode)."""

    def __init__(self, arm_order: Sequence[str] = (), groups: dict[str, str] | None = None, *,
                 pairs: bool = True) -> None:
        self.arms: dict[str, ArmStats] = {}
        self.order = list(arm_order)
        self.pairs = pairs
        self.paired = PairedStats(arm_order, groups)
        self.forks = ForkStats()
        self.checkpoints = CheckpointStats()

    def add(self, record: EpisodeRecord | dict[str, Any]) -> None:
        r = record if isinstance(record, dict) else summary_fields(record)
        self.arms.setdefault(r["arm"], ArmStats(r["arm"])).add(r)
        if self.pairs:
            self.paired.add(r["arm"], r["scenario"], int(r["task_idx"]), int(r["repeat"]), r["outcome"],
                            float(r.get("reward", 0.0)), int(r.get("seed") or 0))
        if r.get("fork"):
            self.forks.add(r)
        self.checkpoints.add(r)

    @property
    def episodes(self) -> int:
        return sum(a.episodes for a in self.arms.values())

    def to_dict(self) -> dict[str, Any]:
        names = [a for a in self.order if a in self.arms] + [a for a in self.arms if a not in self.order]
        out: dict[str, Any] = {"episodes": self.episodes, "arms": {name: self.arms[name].to_dict() for name in names}}
        ask, solo = self.forks.arms.get("ask"), self.forks.arms.get("solo")
        if ask and solo:  # a fork run: Δ = ask − solo in every table (the value of asking), whatever the --arm order
            self.paired.put_before(solo, ask)
        if len(self.arms) > 1:
            out.update(paired_summary(self.paired))
        forks = self.forks.to_dict(out.get("paired"))
        if forks is not None:
            out["value_of_asking"] = forks
        checkpoints = self.checkpoints.to_dict()
        if checkpoints is not None:
            out["checkpoints"] = checkpoints
        return out


def continuation_start(r: dict[str, Any]) -> int:
    """The last turn of a fork's prefix (its fork point), whose expert calls and nudges are not the arm's;
    0 for an episode that is not an ask/solo fork."""
    fork = r.get("fork") or {}
    return int(fork.get("turn") or 0) if fork.get("mode") in ("ask", "solo") else 0


def summary_fields(record: EpisodeRecord) -> dict[str, Any]:
    """The record's fields a summary needs, without dumping its messages."""
    return {
        "arm": record.arm, "scenario": record.scenario, "task_idx": record.task_idx, "repeat": record.repeat,
        "seed": record.seed, "timings": {"wall_s": record.timings.get("wall_s", 0.0)},
        "policy": record.policy.model_dump(), "expert": record.expert.model_dump()
        if record.expert else None, "outcome": record.outcome, "end_reason": record.end_reason,
        "verdict": record.verdict,
        "format_errors": record.format_errors, "ask_style": record.ask_style, "expert_calls": record.expert_calls,
        "nudges": record.nudges, "nudge_log": [n.model_dump() for n in record.nudge_log], "turns": record.turns,
        "reward": record.reward, "usage": {k: v.model_dump() for k, v in record.usage.items()},
        "error": record.error.model_dump(by_alias=True) if record.error else None,
        **({"fork": record.fork} if record.fork else {}),
        **({"checkpoints": record.checkpoints} if record.checkpoints else {}),
        **({"reasoning_dropped": True} if any(m.reasoning_dropped for m in record.messages) else {}),
    }
