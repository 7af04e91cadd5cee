"""GRPO groups: expert and solo rollouts per task, the training-wheels curriculum, advantages."""

from awm_runtime.groups._advantage import AdvantageMode, group_advantages
from awm_runtime.groups._planner import Group, GroupPlanner, StepStats, had_format_error
from awm_runtime.groups._ratio import (
    FIRST_PHASE,
    TRAINING_WHEELS,
    Ratio,
    parse_ratio,
    phase_for,
    phase_members,
    scale,
)

__all__ = [
    "FIRST_PHASE",
    "TRAINING_WHEELS",
    "AdvantageMode",
    "Group",
    "GroupPlanner",
    "Ratio",
    "StepStats",
    "group_advantages",
    "had_format_error",
    "parse_ratio",
    "phase_for",
    "phase_members",
    "scale",
]
