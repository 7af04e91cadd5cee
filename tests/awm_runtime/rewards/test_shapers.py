"""Reward tables and their classification of solo, recovery and blind episodes."""

from __future__ import annotations

import pytest

from awm_runtime import EpisodeRecord, ModelRef
from awm_runtime.rewards import advice_cost, awm, openenv, try_first


def rec(outcome: str, ask_style: str = "solo", expert_calls: int = 0) -> EpisodeRecord:
    return EpisodeRecord(episode_id="e", arm="a", scenario="s", task_idx=0, repeat=0,
                         policy=ModelRef(alias="p", model="m"), outcome=outcome,
                         verdict="complete" if outcome == "complete" else "others",
                         ask_style=ask_style, expert_calls=expert_calls)  # type: ignore[arg-type]


@pytest.mark.parametrize(("outcome", "value"), [("complete", 1.0), ("incomplete", 0.1), ("format_error", -1.0),
                                                ("error", 0.0)])
def test_awm_and_openenv_tables(outcome: str, value: float) -> None:
    assert awm().shape(rec(outcome))[0] == value == openenv().shape(rec(outcome))[0]


@pytest.mark.parametrize(("outcome", "style", "value"), [
    ("complete", "solo", 2.0), ("complete", "recovery", 1.3), ("complete", "blind", 0.8),
    ("incomplete", "recovery", 0.1), ("format_error", "solo", -1.0), ("error", "blind", 0.0)])
def test_try_first_hierarchy(outcome: str, style: str, value: float) -> None:
    reward, parts = try_first().shape(rec(outcome, style, expert_calls=0 if style == "solo" else 1))
    assert reward == value and parts["ask_style"] == style


def test_advice_cost_subtracts_per_call_but_not_for_infrastructure_errors() -> None:
    reward, parts = advice_cost("0.25").shape(rec("complete", "recovery", expert_calls=2))
    assert reward == pytest.approx(1.3 - 0.5) and parts["advice_penalty"] == -0.5
    assert advice_cost("0.25").shape(rec("error", "blind", expert_calls=2))[0] == 0.0
