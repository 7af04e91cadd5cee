"""build_harness: a Harness from names, put together as a prepared run's arms are (assemble_harness)."""

from __future__ import annotations

import awm_runtime
from awm_runtime.episode import EpisodeLimits, Harness


def test_build_harness_puts_the_named_plugins_together() -> None:
    harness = awm_runtime.build_harness("sim/oracle", limits=EpisodeLimits(max_turns=3))
    assert isinstance(harness, Harness)
    assert harness.policy.ref.alias == "sim/oracle" and harness.expert is None
    assert [rule.name for rule in harness.nudges] == ["on_error", "on_stall"]
    assert harness.shaper.name == "awm" and harness.limits.max_turns == 3


def test_build_harness_defaults_its_limits() -> None:
    assert awm_runtime.build_harness("sim/oracle", nudges=()).limits == EpisodeLimits()
