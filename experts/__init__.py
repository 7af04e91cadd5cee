"""Experts: an LLM on the expert role, and the reference-solution oracle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from experts._llm import LLMExpert, repair_plan
from experts._oracle import OracleExpert

if TYPE_CHECKING:
    from awm_runtime._build import BuildContext


def build_llm_expert(alias: str, ctx: BuildContext) -> LLMExpert:
    """Entry point `llm`: the model alias `alias` on the expert role."""
    return LLMExpert(ctx.client(alias, "expert"))


def build_oracle_expert(arg: str, ctx: BuildContext) -> OracleExpert:
    """Entry point `oracle`: answers from the reference solutions of the loaded worlds."""
    return OracleExpert(ctx.solution)


__all__ = ["LLMExpert", "OracleExpert", "build_llm_expert", "build_oracle_expert", "repair_plan"]
