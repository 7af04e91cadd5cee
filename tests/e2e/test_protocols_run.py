"""awm-run with an alias of each protocol, the loopback server playing the model (BRIEF §2).

The server answers like the simulated models over real HTTP, reading the protocol off each
request (tools= for native, call_tool in the system prompt for awm, else hermes).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.policies.protocols import PROTOCOLS, parse_reply
from awm_runtime.testing import FakeOpenAI, sim_responder, teach_builtin
from awm_runtime.worlds import load_worlds
from tests.e2e.test_awm_run import awm_run, records

KEY = "loop-key-protocols-01"
ARMS = [arg for p in PROTOCOLS for arg in ("--arm", f"{p}:policy=loop-{p}")]


def write_config(path: Path, url: str) -> Path:
    path.write_text("".join(f"""
[models.loop-{p}]
model = "openai/loop-model"
api_base = "{url}"
api_key_env = "LOOP_KEY"
protocol = "{p}"
max_concurrency = 16
""" for p in PROTOCOLS))
    return path


@pytest.fixture(scope="module")
def tool_names() -> dict[str, set[str]]:
    """Each built-in scenario's tool names, read from a real session."""
    async def read() -> dict[str, set[str]]:
        world = load_worlds("builtin")
        out: dict[str, set[str]] = {}
        try:
            for task in world.tasks():
                if task.scenario not in out:
                    session = await world.open(task, episode_id=uuid.uuid4().hex)
                    out[task.scenario] = {t.name for t in session.tools}
                    await session.close()
        finally:
            world.close()
        return out
    return asyncio.run(read())


def serve(behaviour: str, knobs: dict[str, Any] | None = None) -> FakeOpenAI:
    teach_builtin()
    return FakeOpenAI(key=KEY, models=("loop-model",), responder=sim_responder(behaviour, knobs), max_lifetime_s=500)


def policy_messages(record: dict[str, Any]) -> Iterator[dict[str, Any]]:
    return (m for m in record["messages"] if m["source"] == "policy")


def recount(record: dict[str, Any], names: set[str]) -> Counter[str]:
    """The record's format errors as the one parser finds them in its recorded messages."""
    counts: Counter[str] = Counter()
    seen = 0
    for m in record["messages"]:
        if m["source"] == "policy":
            parsed = parse_reply(record["policy"]["protocol"], m["content"], m.get("tool_calls"), names,
                                 call_id=f"call_{seen}", finish_reason=m.get("finish_reason"))
            counts.update(parsed.kinds)
        seen += m["role"] == "assistant"
    return counts


def test_every_protocol_completes_tasks_in_every_builtin_world(tmp_path: Path) -> None:
    """Half the tasks of each of the six worlds, per protocol, to keep the suite's time in check;
    the full sweep (drop --tasks) completes 180 of 180 the same way."""
    out = tmp_path / "run"
    with serve("oracle") as server:
        config = write_config(tmp_path / "awm.toml", server.url)
        proc = awm_run("--config", str(config), "--expert", "none", "--preflight", "quick",
                       "--tasks", "0-4", "--concurrency", "24", *ARMS,
                       "--out", str(out), "--quiet", env={"LOOP_KEY": KEY})
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert Counter(r["arm"] for r in recs) == {p: 30 for p in PROTOCOLS}
    assert len({r["scenario"] for r in recs}) == 6
    assert all(r["outcome"] == "complete" and r["verdict"] == "complete" for r in recs)
    assert all(r["policy"]["protocol"] == r["arm"] for r in recs)
    for r in recs:
        replies = list(policy_messages(r))
        if r["arm"] == "native":
            assert all(m["tool_calls"] for m in replies[:-1]) and replies[-1]["content"]
        else:  # text protocols: calls in the content, results as user turns
            assert all("<tool_call>" in m["content"] for m in replies[:-1])
            assert all(m["role"] == "user" for m in r["messages"] if m["source"] == "world")
        if r["arm"] == "awm":
            assert '"list_tools"' in replies[0]["content"] and '"call_tool"' in replies[1]["content"]
            assert sum('"list_tools"' in m["content"] for m in replies) == 1
    assert len(server.requests) == sum(r["turns"] for r in recs)


def test_format_error_counts_equal_the_bad_replies_in_each_record(tmp_path: Path,
                                                                  tool_names: dict[str, set[str]]) -> None:
    out = tmp_path / "run"
    arms = [*ARMS, "--arm", "native-as-awm:policy=loop-native,protocol=awm"]
    with serve("novice", {"format_error_rate": 0.4, "think": True}) as server:
        config = write_config(tmp_path / "awm.toml", server.url)
        proc = awm_run("--config", str(config), "--expert", "none", "--preflight", "quick",
                       "--scenarios", "homehub*,shopfront*",
                       "--tasks", "0-4", "--thinking", "off", "--tool-result-chars", "300", *arms,
                       "--out", str(out), "--quiet", env={"LOOP_KEY": KEY})
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) == 4 * 10
    kinds: Counter[str] = Counter()
    for r in recs:
        bad = [m for m in policy_messages(r) if m["format_error"]]
        assert len(bad) == sum(n for k, n in r["format_errors"].items() if k != "multiple_calls")
        assert Counter(m["format_error"] for m in bad) + Counter(
            {"multiple_calls": r["format_errors"].get("multiple_calls", 0)}) == Counter(r["format_errors"])
        assert recount(r, tool_names[r["scenario"]]) == Counter(r["format_errors"]), r["episode_id"]
        kinds.update(r["format_errors"])
    slips = {"invalid_json", "empty_reply", "unclosed_tag", "missing_name", "unknown_tool", "multiple_calls"}
    assert slips <= set(kinds)
    assert {r["policy"]["protocol"] for r in recs if r["arm"] == "native-as-awm"} == {"awm"}
    thoughts = [m for r in recs if r["arm"] != "native" for m in policy_messages(r) if m["content"]]
    assert thoughts and all("work out the next step" in (m["reasoning"] or "") for m in thoughts)
    assert all(r["chat_template_kwargs"] == {"enable_thinking": False} for r in server.requests)
    results = [m["content"] for r in recs for m in r["messages"] if m["source"] == "world"]
    cut = [c for c in results if '"input_schema"' not in c]  # awm's list_tools listing is never cut
    assert any("[truncated" in c for c in cut) and all(len(c) < 300 + 200 for c in cut)  # + framing and notes


def test_ending_at_the_first_format_error_scores_minus_one(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with serve("novice", {"format_error_rate": 0.6}) as server:
        config = write_config(tmp_path / "awm.toml", server.url)
        proc = awm_run("--config", str(config), "--expert", "none", "--preflight", "quick",
                       "--scenarios", "streamwave*", "--tasks", "0-4",
                       "--on-format-error", "end", *ARMS, "--out", str(out), "--quiet", env={"LOOP_KEY": KEY})
    assert proc.returncode == 0, proc.stderr
    ended = [r for r in records(out) if r["outcome"] == "format_error"]
    assert ended and all(r["reward"] == -1.0 and r["verdict"] == "not_run" for r in ended)
    for r in ended:
        replies = list(policy_messages(r))
        assert [bool(m["format_error"]) for m in replies] == [False] * (len(replies) - 1) + [True]
        assert sum(n for k, n in r["format_errors"].items() if k != "multiple_calls") == 1
