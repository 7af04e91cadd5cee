"""Every prompt template renders with fixture values: no missing or stray placeholders."""

from __future__ import annotations

from importlib.resources import files

import pytest

from awm_runtime._prompts import render

VALUES = {"scenario": "Shop", "tools": "[]", "task": "Do it", "result": "{}", "kind": "invalid_json",
          "detail": "bad", "turns": 5, "criteria": "", "trajectory": "(none)", "question": "?", "context": "",
          "expert_hint": "", "evidence": "{}", "final_answer": "done", "advice": "{}", "mode": "code",
          "code": "def verify_task(): ...", "guidance": "", "boundary": "0f3a",
          "data": "{}"}
NAMES = sorted(p.name for p in files("awm_runtime.prompts").iterdir() if p.name.endswith(".md"))


@pytest.mark.parametrize("name", NAMES)
def test_template_renders(name: str) -> None:
    text = render(name, **VALUES)
    assert text and "$" not in text.replace("$$", "")


def test_nudge_texts_are_the_recipe_texts() -> None:
    assert render("nudge_on_error.md") == ("The last tool call returned an error. If you are stuck, call ask_expert "
                                           "with the error details.")


def test_expert_prompt_carries_the_simulation_marker() -> None:
    from awm_runtime.models.sim import EXPERT_MARKER

    assert render("expert_system.md", scenario="x").startswith(EXPERT_MARKER)
