"""Training exports of a run directory: SFT conversations, GRPO groups, and before/after-advice pairs."""

from awm_runtime.export._formats import ExportStats, grpo, pairs, sft
from awm_runtime.export._read import (
    action_of,
    arm_protocols,
    chat_message,
    guess_protocol,
    is_target,
    open_run,
    records,
)

__all__ = ["ExportStats", "action_of", "arm_protocols", "chat_message", "grpo", "guess_protocol", "is_target",
           "open_run", "pairs", "records", "sft"]
