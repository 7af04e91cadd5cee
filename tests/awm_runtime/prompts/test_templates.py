"""Every prompt template renders with fixture values: no missing or stray placeholders."""

from __future__ import annotations

import os
import re
from importlib.resources import files
from pathlib import Path

import pytest

from awm_runtime._errors import ConfigError
from awm_runtime._prompts import PROMPTS_ENV, render, use_prompts

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


def test_an_override_folder_replaces_templates_with_the_same_variables(tmp_path: Path) -> None:
    (tmp_path / "policy_mcp_native.md").write_text("Use the tools of $scenario. Be brief.\n")
    use_prompts(tmp_path)
    try:
        assert os.environ[PROMPTS_ENV] == str(tmp_path.resolve())  # worker processes inherit it
        assert render("policy_mcp_native.md", scenario="notes") == "Use the tools of notes. Be brief."
        assert render("task.md", task="x") == "x"  # the others stay packaged
    finally:
        use_prompts(None)
    assert render("policy_mcp_native.md", scenario="notes").startswith("You are an agent")


@pytest.mark.parametrize(("name", "text", "says"), [
    ("policy_native.md", "Hi $user_id\n", "unknown variable $user_id; this template has: $scenario"),
    ("judge_system.md", "Pay $5\n", "a stray '$'"),
    ("my_prompt.md", "x\n", "my_prompt.md is not a prompt template; the names are: ask_expert_tool.md"),
])
def test_bad_overrides_are_one_line_config_errors(tmp_path: Path, name: str, text: str, says: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError, match=re.escape(says)):
        use_prompts(tmp_path)
    assert PROMPTS_ENV not in os.environ
    with pytest.raises(ConfigError, match="not a directory"):
        use_prompts(tmp_path / "missing")


def test_mcp_prompts_invent_no_application_and_no_user() -> None:
    for protocol in ("native", "awm", "hermes"):
        text = render(f"policy_mcp_{protocol}.md", **VALUES)
        assert 'MCP server "Shop"' in text and "user id" not in text and "application" not in text
    assert "database" not in render("judge_mcp_request.md", **VALUES)
    assert "complete|incomplete" in render("judge_mcp_system.md")
