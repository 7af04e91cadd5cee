"""The episode loop, embeddable in any asyncio application."""

from awm_runtime.episode._advice import reference_plan, summarize_trajectory
from awm_runtime.episode._checkpoint import Checkpoint, load_checkpoint
from awm_runtime.episode._checkpoint_store import Checkpointer
from awm_runtime.episode._fork import fork_episode
from awm_runtime.episode._loop import EpisodeLimits, ExpertBudget, Harness, offered_tools, run_episode
from awm_runtime.episode._tools import ASK_EXPERT, ask_expert_spec, tool_listing

__all__ = [
    "ASK_EXPERT",
    "Checkpoint",
    "Checkpointer",
    "EpisodeLimits",
    "ExpertBudget",
    "Harness",
    "ask_expert_spec",
    "fork_episode",
    "load_checkpoint",
    "offered_tools",
    "reference_plan",
    "run_episode",
    "summarize_trajectory",
    "tool_listing",
]
