"""Experts: an LLM on the expert role, the reference-solution oracle, a static advisor, and people."""

from experts._build import (
    build_human_expert,
    build_llm_expert,
    build_oracle_expert,
    build_static_advisor,
    parse_human_arg,
)
from experts._criteria import CriteriaStore, cache_dir
from experts._human import HumanExpert, HumanQueue, HumanRequest, describe
from experts._llm import LLMExpert, repair_plan, tool_lines
from experts._oracle import OracleExpert
from experts._static import StaticAdvisor
from experts._terminal import TerminalDesk
from experts._web import WebDesk

__all__ = [
    "CriteriaStore",
    "HumanExpert",
    "HumanQueue",
    "HumanRequest",
    "LLMExpert",
    "OracleExpert",
    "StaticAdvisor",
    "TerminalDesk",
    "WebDesk",
    "build_human_expert",
    "build_llm_expert",
    "build_oracle_expert",
    "build_static_advisor",
    "cache_dir",
    "describe",
    "parse_human_arg",
    "repair_plan",
    "tool_lines",
]
