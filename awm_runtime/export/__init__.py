"""Training exports of a run directory, in the shapes trainers load as they are.

sft (TRL tool-calling conversations), grpo (TRL prompt-only rows, plus the rollouts with their
advantages), pairs (TRL preference rows around expert interventions), atif (Harbor's ATIF-v1.6).
"""

from awm_runtime.export._atif import atif, trajectory, validate
from awm_runtime.export._forks import ask_labels, fork_pairs
from awm_runtime.export._grpo import grpo
from awm_runtime.export._pairs import followed, pairs
from awm_runtime.export._read import (
    ExportStats,
    RunSource,
    action_of,
    arm_protocols,
    guess_protocol,
    is_target,
    open_run,
    records,
    run_source,
)
from awm_runtime.export._rows import drop_reasoning, trl_message, trl_messages
from awm_runtime.export._sft import sft

FORMATS = ("sft", "grpo", "pairs", "atif", "fork-pairs", "ask-labels")

__all__ = [
    "FORMATS",
    "ExportStats",
    "RunSource",
    "action_of",
    "arm_protocols",
    "ask_labels",
    "atif",
    "drop_reasoning",
    "followed",
    "fork_pairs",
    "grpo",
    "guess_protocol",
    "is_target",
    "open_run",
    "pairs",
    "records",
    "run_source",
    "sft",
    "trajectory",
    "trl_message",
    "trl_messages",
    "validate",
]
