"""The report's streaming collection: what followed nudges and expert answers, old and new record shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import ConfigError, EpisodeRecord, Message, ModelRef
from awm_runtime.logs import EPISODES, record_line
from awm_runtime.report._collect import followed_by, load_run, run_labels
from awm_runtime.report._html import render


def call(name: str, cid: str) -> list[dict[str, Any]]:
    return [{"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}]


def m(role: str, source: str, **kw: Any) -> dict[str, Any]:
    return Message(role=role, source=source, **kw).model_dump()  # type: ignore[arg-type]


def test_followed_by_reads_the_policy_s_next_action() -> None:
    messages = [
        m("system", "system", content="sys"), m("user", "system", content="task"),
        m("assistant", "policy", tool_calls=call("list", "c0")),
        m("tool", "world", content="err", tool_call_id="c0", tool_error=True),
        m("user", "nudge", content="ask"),
        m("assistant", "policy", tool_calls=call("ask_expert", "c1")),
        m("tool", "expert", content="plan", tool_call_id="c1", name="ask_expert"),
        m("assistant", "policy", tool_calls=call("get", "c2")),
        m("tool", "world", content="bad", tool_call_id="c2", tool_error=True),
        m("user", "nudge", content="ask"),
        m("assistant", "policy", content="{bad", format_error="invalid_json"),
        m("tool", "system", content="could not execute", tool_call_id="x"),
        m("user", "nudge", content="ask"),
    ]
    after_nudge, after_expert = followed_by(messages)
    assert after_nudge == ["asked the expert", "format error", "episode ended"]
    assert after_expert == ["tool error"]
    ok = [m("tool", "expert", content="plan"), m("assistant", "policy", tool_calls=call("get", "c3")),
          m("tool", "world", content="{}", tool_call_id="c3", tool_error=False)]
    assert followed_by(ok) == ([], ["tool call"])


def rec(i: int, outcome: str, **extra: Any) -> dict[str, Any]:
    r = EpisodeRecord(episode_id=f"e{i}", arm="a" if i % 2 else "b", scenario="s", task_idx=i // 2, repeat=0,
                      policy=ModelRef(alias="p", model="p"), outcome=outcome,  # type: ignore[arg-type]
                      verdict="complete" if outcome == "complete" else "others").model_dump(mode="json", by_alias=True)
    return {**r, **extra}


def test_old_and_new_record_shapes_render_and_strict_differs_from_accountable(tmp_path: Path) -> None:
    records = [rec(0, "complete"), rec(1, "complete", end_reason="final_answer"),
               rec(2, "error", end_reason="model_error", error={"class": "ModelError", "message": "503"}),
               rec(3, "incomplete", end_reason="timeout"), rec(4, "complete"), rec(5, "complete")]
    for r in records[:2]:  # records written before these fields existed
        for key in ("nudge_log", "expert_answers", "group", "timings", "ask_style", "format_errors"):
            r.pop(key, None)
    (tmp_path / EPISODES).write_text("".join(json.dumps(r) + "\n" for r in records))
    run = load_run(tmp_path, "r")  # no manifest, no summary: a run still writing
    b = run.series["b"]
    assert (b.total.complete, b.total.accountable, b.total.episodes) == (2, 2, 3)
    assert b.end_reasons == {"n/a": 2, "model_error": 1}
    page = render([run], None)
    assert "100.0% [" in page and "66.7% [" in page  # accountable vs strict for arm b
    assert "no summary.json" in page and "end: timeout" in page
    assert "<script" not in page


def test_names_that_look_like_mathtext_are_drawn_as_text(tmp_path: Path) -> None:
    records = [{**rec(i, "complete" if i % 3 else "incomplete"), "arm": "$\\frac{$" if i % 2 else "a$b$c"}
               for i in range(8)]
    (tmp_path / EPISODES).write_text("".join(json.dumps(r) + "\n" for r in records))
    page = render([load_run(tmp_path, "$x^{$")], None)  # matplotlib would raise on this mathtext
    assert "$\\frac{$" in page and 'id="fig-forest"' in page


def test_labels_and_bad_directories(tmp_path: Path) -> None:
    assert run_labels([Path("/x/one/run"), Path("/x/two/run")]) == ["one/run", "two/run"]
    assert run_labels([Path("/x/a"), Path("/y/b")]) == ["a", "b"]
    with pytest.raises(ConfigError, match=r"holds no episodes\.jsonl"):
        load_run(tmp_path, "x")
    (tmp_path / EPISODES).write_bytes(record_line(EpisodeRecord.model_validate(rec(1, "complete")))[:-5])
    with pytest.raises(ConfigError, match="no finished episodes"):
        load_run(tmp_path, "x")  # only a torn line


def test_distributions_leave_infra_errors_out_and_count_them_apart() -> None:
    from awm_runtime.report._collect import Series

    s = Series("run", "a", "a")
    s.add({"outcome": "complete", "reward": 1.0, "turns": 3, "seed": 1})
    s.add({"outcome": "error", "reward": 0.0, "turns": 1, "seed": 1, "task_idx": 1})
    assert (s.rewards, s.turns, s.infra_errors, s.total.episodes) == ([1.0], [3], 1, 2)
    s.add({"outcome": "incomplete", "reward": 0.1, "turns": 2, "seed": 1})  # the first task again: a duplicate
    assert s.duplicates == [("?", 0, 0, 1)] and s.pairs[("?", 0, 0, 1)] == ("complete", 1.0)
