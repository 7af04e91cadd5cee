"""The --until-decided hook: pairs go to the StoppingRule as they complete, budgets stop the feed."""

from __future__ import annotations

from typing import Any

import pytest

from awm_runtime._errors import ConfigError
from awm_runtime._types import EpisodeSpec
from awm_runtime._units import Unit
from awm_runtime.scheduler import RunControl
from awm_runtime.scheduler._decide import PairWatch, WatchedStats, endpoint_totals, require_prices


class Rule:
    """A StoppingRule that stops at the third pair and remembers what it was shown."""

    def __init__(self) -> None:
        self.pairs: list[list[str]] = []

    def pair_finished(self, pair: Any) -> str | None:
        self.pairs.append([r["arm"] for r in pair])
        return "decided: enough" if len(self.pairs) == 3 else None

    def state(self) -> dict[str, Any]:
        return {"decided": len(self.pairs) >= 3, "e_value": 1.0}


def _rec(arm: str, task: int, cost: float = 0.0) -> dict[str, Any]:
    return {"arm": arm, "scenario": "s", "task_idx": task, "repeat": 0, "seed": 7, "outcome": "complete",
            "reward": 1.0, "verdict": "complete", "policy": {}, "expert": None, "format_errors": {},
            "usage": {"policy": {"calls": 1, "cost_usd": cost, "cost_known": True}}}


def test_pairs_reach_the_rule_in_arm_order_and_a_decision_stops_the_run() -> None:
    control, rule = RunControl(), Rule()
    watch = PairWatch(["a", "b"], rule, control)
    stats = WatchedStats(["a", "b"], watch)
    for task in range(4):
        stats.add(_rec("b", task))  # the later arm's record arrives first
        assert rule.pairs == [["a", "b"]] * task  # a half pair is not a pair
        stats.add(_rec("a", task))
    assert rule.pairs == [["a", "b"]] * 3  # asked no more once decided
    assert control.stop_requested and control.reason == "decided: enough" == watch.reason
    assert stats.episodes == 8 and watch.summary(False)["stop_reason"] == "decided: enough"


def test_the_episode_budget_caps_the_feed_and_the_usd_budget_stops() -> None:
    watch = PairWatch(["a", "b"], Rule(), RunControl(), max_episodes=5)
    units = (Unit([EpisodeSpec(arm=arm, scenario="s", task_idx=t)]) for t in range(10) for arm in ("a", "b"))
    assert len(list(watch.capped(units, already=2))) == 3
    assert watch.reason == "max-episodes budget of 5 spent: not decided"
    control = RunControl()
    watch = PairWatch(["a", "b"], Rule(), control, max_usd=0.05)
    watch.observe(_rec("a", 0, cost=0.03))
    assert not control.stop_requested
    watch.observe(_rec("a", 1, cost=0.03))
    assert control.stop_requested and watch.reason.startswith("max-usd budget of $0.05 spent")
    assert PairWatch(["a", "b"], Rule(), RunControl()).summary(True)["stop_reason"] == "the plan ran out: not decided"


def test_max_usd_refuses_models_without_a_price_and_endpoints_are_summed() -> None:
    class Client:
        def __init__(self, source: str) -> None:
            self.prices = type("P", (), {"source": source})()

    class Prep:
        ctx = type("C", (), {"clients": {("policy", "sim/novice"): Client("unknown"),
                                         ("expert", "gpt"): Client("litellm"), ("judge", "j"): Client("unknown")}})

    with pytest.raises(ConfigError, match=r"--max-usd: no price for policy sim/novice; set input_cost_per_mtok"):
        require_prices(Prep())

    class Stats:
        endpoint, roles, calls, errors, retries, rate_limited = "e", ("policy",), 40, 2, 3, 1

    assert endpoint_totals([Stats()]) == [{"endpoint": "e", "roles": ["policy"], "calls": 40, "failed_attempts": 2,
                                          "retries": 3, "rate_limited": 1, "failed_per_100_calls": 5.0}]


def test_the_sequential_cost_is_unknown_not_zero_when_a_call_had_no_price() -> None:
    watch = PairWatch(["a", "b"], Rule(), RunControl())
    watch.observe(_rec("a", 0, cost=0.5))
    assert watch.summary(True)["cost_usd"] == 0.5 and watch.summary(True)["cost_known"] is True
    unpriced = _rec("b", 0)
    unpriced["usage"]["policy"]["cost_known"] = False
    watch.observe(unpriced)
    assert watch.summary(True)["cost_usd"] is None and watch.summary(True)["cost_known"] is False


def test_max_usd_stops_when_a_call_cost_becomes_unknown() -> None:
    """A provider's invalid usage leaves a call unpriced: the dollar budget can no longer be kept, so it stops."""
    control = RunControl()
    watch = PairWatch(["a", "b"], Rule(), control, max_usd=10.0)
    watch.observe(_rec("a", 0, cost=0.01))
    assert not control.stop_requested
    bad = _rec("a", 1)
    bad["usage"] = {"policy": {"calls": 1, "cost_usd": 0.0, "cost_known": False}, "judge": {"cost_known": False}}
    watch.observe(bad)
    assert control.stop_requested and watch.reason == (
        "max-usd budget cannot be kept: a policy call's cost is unknown (its provider reported invalid usage): "
        "not decided")
    unpriced_judge = PairWatch(["a", "b"], Rule(), RunControl(), max_usd=10.0)
    unpriced_judge.observe({**_rec("a", 0), "usage": {"judge": {"calls": 1, "cost_known": False}}})
    assert unpriced_judge.reason is None  # a judge needs no price for --max-usd


def test_a_decision_ends_the_feed_before_the_next_unit() -> None:
    watch = PairWatch(["a", "b"], Rule(), RunControl())
    units = (Unit([EpisodeSpec(arm=arm, scenario="s", task_idx=t)]) for t in range(3) for arm in ("a", "b"))
    fed = watch.capped(units, already=0)
    assert next(fed).keys == [("a", "s", 0, 0)]
    watch.stop("decided: enough")
    assert list(fed) == []  # nothing more is handed out once the question is answered
