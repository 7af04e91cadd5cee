"""The episode loop, embeddable in any asyncio application."""

from awm_runtime.episode._advice import reference_plan, summarize_trajectory
from awm_runtime.episode._checkpoint import CHECKPOINTS, INDEX, Checkpoint, load_checkpoint
from awm_runtime.episode._checkpoint_store import Checkpointer
from awm_runtime.episode._fork import EpisodeHook, fork_episode, wrap_session
from awm_runtime.episode._loop import EpisodeLimits, ExpertBudget, Harness, offered_tools, run_episode
from awm_runtime.episode._outcome import ending_for, error_info
from awm_runtime.episode._tools import ASK_EXPERT, ask_expert_spec, tool_listing

__all__ = [
    "ASK_EXPERT",
    "CHECKPOINTS",
    "INDEX",
    "Checkpoint",
    "Checkpointer",
    "EpisodeHook",
    "EpisodeLimits",
    "ExpertBudget",
    "Harness",
    "ask_expert_spec",
    "ending_for",
    "error_info",
    "fork_episode",
    "load_checkpoint",
    "offered_tools",
    "reference_plan",
    "run_episode",
    "summarize_trajectory",
    "tool_listing",
    "wrap_session",
]
