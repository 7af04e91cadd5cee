"""Client-side tools: the virtual `ask_expert`, and AWM's list_tools text."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache

from awm_runtime._prompts import render
from awm_runtime._types import ToolSpec

ASK_EXPERT = "ask_expert"


@cache
def ask_expert_spec() -> ToolSpec:
    """The virtual tool offered when an expert is available. The world never sees it."""
    return ToolSpec(
        name=ASK_EXPERT,
        description=render("ask_expert_tool.md"),
        input_schema={
            "type": "object",
            "properties": {
                "question": {"type": "string", "title": "question",
                             "description": "What you need help with, in one or two sentences."},
                "context": {"type": "string", "title": "context",
                            "description": "Relevant details: errors you saw, ids you found, what you tried."},
            },
            "required": ["question"],
            "title": "ask_expertArguments",
        },
    )


def tool_listing(tools: Sequence[ToolSpec]) -> str:
    """What AWM's list_tools returns: each tool's name, description and input schema."""
    return json.dumps([{"name": t.name, "description": t.description, "input_schema": t.input_schema}
                       for t in tools], indent=2, ensure_ascii=False)
