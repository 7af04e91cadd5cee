"""Policies: the chat policy over any model, replay of logged runs, and a person at the terminal.

Each is registered as an entry point in the `awm_runtime.policies` group; `--policy NAME`
resolves a registered plug-in first (`replay:RUN_DIR`, `human`), else a model alias (`chat`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from awm_runtime.policies._chat import ChatPolicy
from awm_runtime.policies._human import HumanPolicy
from awm_runtime.policies._replay import LoggedEpisode, ReplayPolicy, load_logged
from awm_runtime.policies.protocols._carry import MAX_ARGUMENT_BYTES

if TYPE_CHECKING:
    from awm_runtime._build import BuildContext


def _tool_result_chars(ctx: BuildContext) -> int:
    return int(ctx.options.get("tool_result_chars", 3000))


def build_chat_policy(alias: str, ctx: BuildContext) -> ChatPolicy:
    """Entry point `chat`: the model alias `alias` on the policy role."""
    return ChatPolicy(ctx.client(alias, "policy"), protocol=ctx.options.get("protocol"),
                      tool_result_chars=_tool_result_chars(ctx), enable_thinking=ctx.options.get("enable_thinking"),
                      reasoning_effort=ctx.options.get("reasoning_effort"),
                      thinking_budget=ctx.options.get("thinking_budget"),
                      max_argument_bytes=int(ctx.options.get("max_argument_bytes") or MAX_ARGUMENT_BYTES))


def build_replay_policy(spec: str, ctx: BuildContext) -> ReplayPolicy:
    """Entry point `replay`: `replay:RUN_DIR` or `replay:RUN_DIR#ARM` re-plays a logged run."""
    _, episodes = load_logged(spec)
    return ReplayPolicy(episodes, label=spec, tool_result_chars=_tool_result_chars(ctx))


def build_human_policy(protocol: str, ctx: BuildContext) -> HumanPolicy:
    """Entry point `human`: `human` or `human:PROTOCOL` (how the transcript is recorded)."""
    return HumanPolicy(protocol=protocol or ctx.options.get("protocol") or "native",
                       tool_result_chars=_tool_result_chars(ctx))


__all__ = [
    "ChatPolicy",
    "HumanPolicy",
    "LoggedEpisode",
    "ReplayPolicy",
    "build_chat_policy",
    "build_human_policy",
    "build_replay_policy",
    "load_logged",
]
