"""Reward tables (BRIEF §3), their solo/recovery/blind classification, and advice-cost."""

from __future__ import annotations

import pytest

from awm_runtime import ConfigError, EpisodeRecord, ModelRef
from awm_runtime._build import build_shaper
from awm_runtime.rewards import AWM_TABLE, advice_cost, awm, openenv, try_first


def rec(outcome: str, ask_style: str = "solo", expert_calls: int = 0, verdict: str | None = None,
        end_reason: str | None = None) -> EpisodeRecord:
    verdict = verdict or {"complete": "complete", "incomplete": "incomplete", "format_error": "not_run",
                          "error": "not_run"}[outcome]
    end_reason = end_reason or {"format_error": "format_error", "error": "model_error"}.get(outcome, "final_answer")
    return EpisodeRecord(episode_id="e", arm="a", scenario="s", task_idx=0, repeat=0,
                         policy=ModelRef(alias="p", model="m"), outcome=outcome, verdict=verdict,
                         end_reason=end_reason, ask_style=ask_style, expert_calls=expert_calls)  # type: ignore[arg-type]


@pytest.mark.parametrize(("outcome", "verdict", "awm_value", "openenv_value"), [
    ("complete", "complete", 1.0, 1.0),
    ("incomplete", "incomplete", 0.1, 0.1),      # the SQL judge's incomplete
    ("incomplete", "others", 0.1, 0.0),          # code mode: AWM's incomplete; OpenEnv's "everything else 0"
    ("incomplete", "agent_error", 0.0, 0.0),     # agent error: 0.0 in both
    ("format_error", "not_run", -1.0, -1.0),     # a format violation ends the rollout at -1
    ("error", "judge_error", 0.0, 0.0),          # infrastructure: never the agent's 0.1 or -1
    ("error", "no_verifier", 0.0, 0.0),          # nothing was judged: the dataset's gap
    # Not judged, the agent's doing: out of time or context is out of budget (like the turn limit, 0.1);
    # a DB broken so that its verifier raises is the agent's error (0.0). OpenEnv: "everything else 0".
    ("incomplete", "not_run:timeout", 0.1, 0.0),
    ("incomplete", "not_run:context_overflow", 0.1, 0.0),
    ("incomplete", "verifier_raised:verifier_raised", 0.0, 0.0),
])
def test_awm_and_openenv_tables(outcome: str, verdict: str, awm_value: float, openenv_value: float) -> None:
    verdict, _, end_reason = verdict.partition(":")
    record = rec(outcome, verdict=verdict, end_reason=end_reason or None)
    reward, parts = awm().shape(record)
    assert reward == awm_value and parts["table"] == "awm" and parts["verdict"] == verdict
    assert openenv().shape(record)[0] == openenv_value


@pytest.mark.parametrize(("outcome", "style", "verdict", "value"), [
    ("complete", "solo", None, 2.0), ("complete", "recovery", None, 1.3), ("complete", "blind", None, 0.8),
    ("incomplete", "recovery", None, 0.1), ("incomplete", "solo", "others", 0.1),
    ("incomplete", "blind", "agent_error", 0.0), ("format_error", "solo", None, -1.0), ("error", "blind", None, 0.0)])
def test_try_first_hierarchy(outcome: str, style: str, verdict: str | None, value: float) -> None:
    reward, parts = try_first().shape(rec(outcome, style, expert_calls=0 if style == "solo" else 1, verdict=verdict))
    assert reward == value and parts["ask_style"] == style and parts["base"] == value


def test_advice_cost_is_agile_over_awm_by_default() -> None:
    reward, parts = advice_cost("0.25").shape(rec("complete", "recovery", expert_calls=2))
    assert reward == pytest.approx(AWM_TABLE["complete"] - 0.5)
    assert parts["inner"] == "awm" and parts["advice_penalty"] == -0.5 and parts["expert_calls"] == 2


def test_advice_cost_over_try_first_and_never_for_infrastructure_errors() -> None:
    shaper = advice_cost("0.25:try-first")
    assert shaper.shape(rec("complete", "recovery", expert_calls=2))[0] == pytest.approx(1.3 - 0.5)
    assert shaper.shape(rec("error", "blind", expert_calls=2))[0] == 0.0
    assert advice_cost("").shape(rec("incomplete", "blind", expert_calls=1))[0] == pytest.approx(0.1 - 0.1)


@pytest.mark.parametrize("name", ["advice-cost:cheap", "advice-cost:-1", "advice-cost:0.1:nope", "tryfirst"])
def test_bad_shaper_names_are_config_errors(name: str) -> None:
    with pytest.raises(ConfigError):
        build_shaper(name)
