"""Policies: the chat policy over any litellm model, and its tool-call protocols."""

from __future__ import annotations

from typing import TYPE_CHECKING

from policies._chat import ChatPolicy

if TYPE_CHECKING:
    from awm_runtime._build import BuildContext


def build_chat_policy(alias: str, ctx: BuildContext) -> ChatPolicy:
    """Entry point `chat`: the model alias `alias` on the policy role."""
    return ChatPolicy(ctx.client(alias, "policy"), tool_result_chars=int(ctx.options.get("tool_result_chars", 3000)))


__all__ = ["ChatPolicy", "build_chat_policy"]
