"""Provider economics: quantiles within 2% (checked against numpy), unknown prices never $0, records' usage."""

from __future__ import annotations

import numpy as np
import pytest

from awm_runtime._types import Usage
from awm_runtime.report import RunStats
from awm_runtime.report._economics import LogHistogram


def test_log_histogram_quantiles_are_within_two_percent() -> None:
    rng = np.random.default_rng(3)
    values = rng.lognormal(mean=-1.0, sigma=1.2, size=20_000)
    hist = LogHistogram()
    for v in values:
        hist.add(float(v))
    for q in (0.5, 0.95):
        assert hist.quantile(q) == pytest.approx(float(np.quantile(values, q)), rel=0.02)
    assert LogHistogram().quantile(0.5) is None and LogHistogram().to_dict()["p50_s"] is None


def _episode(arm: str, outcome: str, cost: float, known: bool | None, latencies: list[float],
             retries: int = 0, error: dict | None = None) -> dict:
    return {"arm": arm, "scenario": "s", "task_idx": 0, "repeat": 0, "seed": 0, "outcome": outcome, "reward": 0.0,
            "verdict": outcome, "policy": {"alias": "cheap"}, "expert": {"alias": "pricey"}, "format_errors": {},
            "timings": {"wall_s": 2.0},
            "usage": {"policy": {"calls": len(latencies), "prompt_tokens": 100, "completion_tokens": 20,
                                 "cost_usd": cost, "cost_known": known, "latency_s": latencies,
                                 "retries": retries}},
            "error": error}


def test_cost_per_completed_task_latency_retries_and_unknown_prices() -> None:
    stats = RunStats()
    stats.add(_episode("priced", "complete", 0.02, True, [0.5, 1.5], retries=1))
    stats.add(_episode("priced", "incomplete", 0.01, True, [1.0]))
    stats.add(_episode("priced", "error", 0.0, True, [], error={"class": "ModelError.rate_limit", "message": "x"}))
    stats.add(_episode("free", "complete", 0.0, False, [0.2]))
    stats.add(_episode("old", "incomplete", 0.0, None, [0.3]))  # a record from before cost_known: unknown
    arms = stats.to_dict()["arms"]
    e = arms["priced"]["economics"]
    assert e["cost_known"] and e["cost_usd"] == 0.03 and e["usd_per_completed_task"] == 0.03
    assert e["tokens_per_episode"] == 120.0 and e["model_errors_by_kind"] == {"rate_limit": 1}
    policy = e["model_calls"]["policy"]
    assert (policy["calls"], policy["retries"], policy["retries_per_100_calls"]) == (3, 1, 33.33)
    assert policy["latency"]["p50_s"] == pytest.approx(1.0, rel=0.02)
    assert e["episode_wall"]["p50_s"] == pytest.approx(2.0, rel=0.02)
    for name in ("free", "old"):
        f = arms[name]["economics"]
        assert not f["cost_known"] and f["cost_usd"] is None and f["usd_per_completed_task"] is None
        assert f["cost_note"] == "unknown: no price for policy cheap"
    stats = RunStats()
    stats.add(_episode("none", "incomplete", 0.01, True, [0.1]))
    assert stats.to_dict()["arms"]["none"]["economics"]["cost_note"] == "n/a: no completed task"


def test_usage_adds_latencies_retries_and_whether_every_call_was_priced() -> None:
    total = Usage()
    total.add(Usage(calls=1, latency_s=[0.5], retries=2, cost_known=True))
    assert total.cost_known is True
    total.add(Usage(calls=1, latency_s=[0.7], cost_known=False))
    total.add(Usage(calls=1, latency_s=[0.1], cost_known=True))
    assert (total.latency_s, total.retries, total.cost_known) == ([0.5, 0.7, 0.1], 2, False)


def test_reasoning_tokens_per_episode_beside_output_tokens_and_unknown_when_not_reported() -> None:
    from awm_runtime._types import EpisodeRecord, Message, ModelRef

    stats = RunStats()
    for reasoning in (30, 10):
        e = _episode("openai", "complete", 0.01, True, [0.5])
        e["usage"]["policy"]["reasoning_tokens"] = reasoning
        stats.add(e)
    stats.add(_episode("claude", "complete", 0.01, True, [0.5]))  # no reasoning_tokens: not reported
    stats.add({**_episode("claude", "complete", 0.01, True, []), "messages": [{"reasoning_dropped": True}]})
    record = EpisodeRecord(episode_id="e", arm="claude", scenario="s", task_idx=1, repeat=0, outcome="complete",
                           verdict="complete", policy=ModelRef(alias="cheap", model="m"), messages=[
                               Message(role="assistant", source="policy", reasoning_dropped=True)])
    stats.add(record)  # a live record: its messages are not dumped, the flag is carried
    arms = stats.to_dict()["arms"]
    openai, claude = arms["openai"], arms["claude"]
    assert openai["economics"]["output_tokens_per_episode"] == 20 and openai["economics"][
        "reasoning_tokens_per_episode"] == 20
    assert openai["economics"]["reasoning_note"] == "" and "reasoning_dropped_episodes" not in openai
    assert claude["economics"]["reasoning_tokens_per_episode"] is None
    assert claude["economics"]["reasoning_note"] == "not reported by policy cheap"
    assert claude["reasoning_dropped_episodes"] == 2
    from rich.console import Console

    from awm_runtime.report import economics_table

    console = Console(width=200, record=True)
    console.print(economics_table(stats.to_dict()))
    row = next(line for line in console.export_text().splitlines() if "of which reasoning" in line)
    assert [c.strip() for c in row.split("│") if c.strip()] == ["of which reasoning", "20", "not reported"]
