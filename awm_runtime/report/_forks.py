"""The value of asking, state by state: ask against solo continuations of the same forked states.

Each forked state (a source episode's checkpoint) has continuations in the `ask` arm (the expert's advice
at the fork turn) and in the `solo` arm (ask_expert refused). Its value of asking is the difference of
their means: ΔP(complete) and Δreward. States of one task are not independent, so the 95% intervals come
from a bootstrap that resamples whole tasks (report/_intervals.py). Continuations that ended in an
infrastructure error are left out and counted. Aggregates: overall, by turn index, by what happened just
before the fork turn (a tool error, a format error, nothing), by scenario and by expert.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from rich.table import Table

from awm_runtime.report._intervals import mean_difference_interval

FORK_METHOD = ("Per forked state: mean of the ask continuations minus mean of the solo continuations, for "
               "completion (ΔP(complete)) and reward; aggregates are means over states, with 95% intervals from a "
               "bootstrap resampling tasks (n/a with fewer than two tasks). Continuations with an infrastructure "
               "error are left out of the accountable view and count as failures in the strict one "
               "(delta_complete_strict).")
BY = ("turn", "preceding", "scenario", "expert")
ALPHA = 0.05


@dataclass(slots=True)
class _State:
    scenario: str
    task_idx: int
    turn: int
    preceding: str
    ask: dict[str, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))  # expert -> runs
    solo: list[tuple[float, float]] = field(default_factory=list)
    ask_errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # expert -> infra errors
    solo_errors: int = 0


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


class ForkStats:
    """Streaming: fed record dicts of a fork run; holds two numbers per continuation, never messages."""

    def __init__(self) -> None:
        self.states: dict[tuple[str, int], _State] = {}
        self.arms: dict[str, str] = {}  # mode (ask, solo) -> the arm that ran it
        self.continuations = {"ask": 0, "solo": 0}
        self.errors = {"ask": 0, "solo": 0}

    def add(self, r: dict[str, Any]) -> None:
        fork = r.get("fork")
        if not fork or fork.get("mode") not in ("ask", "solo"):
            return
        mode = str(fork["mode"])
        self.arms.setdefault(mode, str(r["arm"]))
        self.continuations[mode] += 1
        key = (str(fork["episode_id"]), int(fork["turn"]))
        state = self.states.get(key)
        if state is None:
            state = self.states[key] = _State(str(r["scenario"]), int(r["task_idx"]), int(fork["turn"]),
                                              str(fork.get("preceding") or "nothing"))
        expert = str((r.get("expert") or {}).get("alias") or "none")
        if r["outcome"] == "error":
            self.errors[mode] += 1
            if mode == "ask":
                state.ask_errors[expert] += 1
            else:
                state.solo_errors += 1
            return
        run = (1.0 if r["outcome"] == "complete" else 0.0, float(r.get("reward", 0.0)))
        if mode == "ask":
            state.ask[expert].append(run)
        else:
            state.solo.append(run)

    @property
    def infra_errors(self) -> int:
        """Continuations that ended in an infrastructure error, both modes."""
        return sum(self.errors.values())

    def rows(self) -> list[dict[str, Any]]:
        """One row per (forked state, expert) with both an ask and a solo continuation."""
        out = []
        for (episode_id, turn), s in self.states.items():
            if not s.solo:
                continue
            for expert, runs in s.ask.items():
                ask_c, solo_c = _mean([c for c, _ in runs]), _mean([c for c, _ in s.solo])
                ask_r, solo_r = _mean([r for _, r in runs]), _mean([r for _, r in s.solo])
                ask_s = sum(c for c, _ in runs) / (len(runs) + s.ask_errors.get(expert, 0))
                solo_s = sum(c for c, _ in s.solo) / (len(s.solo) + s.solo_errors)
                out.append({"episode_id": episode_id, "turn": turn, "scenario": s.scenario, "task_idx": s.task_idx,
                            "preceding": s.preceding, "expert": expert, "n_ask": len(runs), "n_solo": len(s.solo),
                            "p_complete_ask": ask_c, "p_complete_solo": solo_c, "delta_complete": ask_c - solo_c,
                            "reward_ask": ask_r, "reward_solo": solo_r, "delta_reward": ask_r - solo_r,
                            "delta_complete_strict": ask_s - solo_s})
        return out

    def to_dict(self, paired: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
        """The value of asking; its overall estimate and interval are the paired comparison solo → ask (Δ = ask −
        solo) when `paired` has it: one estimate, computed once, the same in both tables."""
        rows = self.rows()
        if not self.states:
            return None
        overall = aggregate(rows)
        ask, solo = self.arms.get("ask"), self.arms.get("solo")
        c = next((c for c in paired or [] if (c.get("a"), c.get("b")) == (solo, ask)), None)
        if c is not None and overall.get("states") and c.get("design") == "paired":
            overall.update({
                "delta_complete": c.get("completion_diff"), "delta_complete_ci": c.get("completion_diff_ci95"),
                "delta_reward": c.get("reward_diff"), "delta_reward_ci": c.get("reward_diff_ci95"),
                "p_complete_ask": c.get("completion_b"), "p_complete_solo": c.get("completion_a"),
                "pairs": c.get("pairs"), "from": f"the paired comparison {solo} → {ask} (Δ = {ask} − {solo})"})
        out: dict[str, Any] = {"states": len(rows), "infra_errors": self.infra_errors, "method": FORK_METHOD,
                               "sign": "Δ = ask − solo: positive when asking helps", "arms": dict(self.arms),
                               "infra_errors_by_mode": self._error_balance(), "overall": overall}
        out["caveat"] = _caveat(overall, out["infra_errors_by_mode"])
        for by in BY:
            groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for row in rows:
                groups[str(row[by])].append(row)
            out[f"by_{by}"] = {k: aggregate(v) for k, v in sorted(groups.items(), key=lambda kv: _order(kv[0]))}
        return out


    def _error_balance(self) -> dict[str, Any]:
        """Infrastructure errors per mode, and whether their share differs beyond chance (Fisher exact)."""
        from awm_runtime.report._exact import fisher

        n_ask, n_solo = self.continuations["ask"], self.continuations["solo"]
        e_ask, e_solo = self.errors["ask"], self.errors["solo"]
        p = fisher(e_ask, n_ask, e_solo, n_solo).value if n_ask and n_solo else None
        return {"ask": e_ask, "ask_continuations": n_ask, "solo": e_solo, "solo_continuations": n_solo,
                "fisher_p": None if p is None else float(f"{p:.4g}"),
                "mode_dependent": p is not None and p < ALPHA}


def _side(ci: list[float] | None) -> int:
    """Which side of zero an interval lies on: +1, -1, or 0 (it holds zero, or there is none)."""
    if not ci:
        return 0
    return 1 if ci[0] > 0 else -1 if ci[1] < 0 else 0


def _caveat(overall: dict[str, Any], balance: dict[str, Any]) -> str | None:
    """Why the accountable value of asking is not a finding, or None when nothing stands against it."""
    if balance["mode_dependent"]:
        return (f"infrastructure errors depend on the mode (ask {balance['ask']} of {balance['ask_continuations']}, "
                f"solo {balance['solo']} of {balance['solo_continuations']}; Fisher exact p = "
                f"{balance['fisher_p']:.3g}): leaving them out censors one mode's failures, so ΔP(complete) is "
                "not a finding; fix the failing infrastructure and rerun")
    if overall.get("states") and _side(overall.get("delta_complete_ci")) != _side(
            overall.get("delta_complete_strict_ci")):
        return (f"the accountable ΔP(complete) {overall['delta_complete_ci']} and the strict one (infrastructure "
                f"errors as failures) {overall['delta_complete_strict_ci']} disagree: not a finding")
    return None


class CheckpointStats:
    """What checkpoints cost a run: their number, bytes and seconds, per checkpoint and per episode turn, and
    the mid-turn saves of replies (fsync'd) beside them."""

    def __init__(self) -> None:
        self.episodes = self.count = self.captures = self.bytes = self.turns = 0
        self.replies = self.reply_bytes = 0
        self.seconds = self.reply_seconds = 0.0
        self.modes: set[str] = set()

    def add(self, r: dict[str, Any]) -> None:
        c = r.get("checkpoints")
        if not c:
            return
        self.episodes += 1
        self.count += int(c.get("count", 0))
        self.captures += int(c.get("captures", c.get("count", 0)))
        self.bytes += int(c.get("bytes", 0))
        self.seconds += float(c.get("seconds", 0.0))
        self.replies += int(c.get("replies", 0))
        self.reply_bytes += int(c.get("reply_bytes", 0))
        self.reply_seconds += float(c.get("reply_seconds", 0.0))
        self.turns += int(r.get("turns", 0))
        self.modes.add(str(c.get("mode")))

    def to_dict(self) -> dict[str, Any] | None:
        if not self.episodes:
            return None
        return {"mode": ",".join(sorted(self.modes)), "episodes": self.episodes, "checkpoints": self.count,
                "bytes": self.bytes, "seconds": round(self.seconds, 4),
                "captures": self.captures,
                "ms_per_capture": round(1000 * self.seconds / self.captures, 3) if self.captures else None,
                "ms_per_checkpoint": round(1000 * self.seconds / self.count, 3) if self.count else None,
                "bytes_per_checkpoint": round(self.bytes / self.count) if self.count else None,
                "bytes_per_turn": round(self.bytes / self.turns) if self.turns else None,
                "replies": self.replies, "reply_seconds": round(self.reply_seconds, 4),
                "ms_per_reply": round(1000 * self.reply_seconds / self.replies, 3) if self.replies else None,
                "reply_bytes_per_turn": round(self.reply_bytes / self.turns) if self.turns else None,
                "ms_per_turn": round(1000 * (self.seconds + self.reply_seconds) / self.turns, 3)
                if self.turns else None}


def _order(key: str) -> tuple[int, Any]:
    return (0, int(key)) if key.isdigit() else (1, key)


def _interval(rows: list[dict[str, Any]], metric: str) -> list[float] | None:
    clusters: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0.0, 0])
    for row in rows:
        c = clusters[(row["scenario"], row["task_idx"])]
        c[0] += row[metric]
        c[1] += 1
    ci = mean_difference_interval([(s, int(n)) for s, n in clusters.values()])
    return None if ci is None else [round(ci[0], 4), round(ci[1], 4)]


def aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over forked states, with task-clustered 95% intervals."""
    if not rows:
        return {"states": 0}
    return {
        "states": len(rows), "tasks": len({(r["scenario"], r["task_idx"]) for r in rows}),
        "p_complete_ask": round(_mean([r["p_complete_ask"] for r in rows]), 4),
        "p_complete_solo": round(_mean([r["p_complete_solo"] for r in rows]), 4),
        "delta_complete": round(_mean([r["delta_complete"] for r in rows]), 4),
        "delta_complete_ci": _interval(rows, "delta_complete"),
        "delta_complete_strict": round(_mean([r["delta_complete_strict"] for r in rows]), 4),
        "delta_complete_strict_ci": _interval(rows, "delta_complete_strict"),
        "delta_reward": round(_mean([r["delta_reward"] for r in rows]), 4),
        "delta_reward_ci": _interval(rows, "delta_reward"),
    }


def forks_table(summary: dict[str, Any]) -> Table | None:
    """The value of asking, overall and broken down, as a rich table (None when the run has no ask/solo forks)."""
    voa = summary.get("value_of_asking")
    if not voa or not voa["overall"].get("states"):  # no state has both an ask and a solo continuation yet
        return None
    caption = [f"overall: {voa['overall']['from']}"] if voa["overall"].get("from") else []
    if voa.get("caveat"):
        caption.append(f"Not a finding: {voa['caveat']}")
    table = Table(title="Value of asking (Δ = ask − solo, per forked state; 95% CI resampling tasks)",
                  caption="\n".join(caption) or None, caption_justify="left")
    for col in ("slice", "states", "P(complete) ask", "P(complete) solo", "ΔP(complete)", "Δreward"):
        table.add_column(col, justify="left" if col == "slice" else "right")

    def ci(value: float | None, bounds: list[float] | None) -> str:
        if value is None:
            return "n/a"
        return f"{value:+.3f}" + (f" [{bounds[0]:+.3f}, {bounds[1]:+.3f}]" if bounds else " [n/a]")

    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.1%}"

    def row(label: str, a: dict[str, Any]) -> None:
        if not a.get("states"):
            return
        table.add_row(label, str(a["states"]), pct(a.get("p_complete_ask")), pct(a.get("p_complete_solo")),
                      ci(a.get("delta_complete"), a.get("delta_complete_ci")),
                      ci(a.get("delta_reward"), a.get("delta_reward_ci")))

    row("overall", voa["overall"])
    labels = {"turn": "after {} turns", "preceding": "after {}", "scenario": "{}", "expert": "expert {}"}
    for by in BY:
        for key, a in voa.get(f"by_{by}", {}).items():
            row(labels[by].format(key), a)
    return table
