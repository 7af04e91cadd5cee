"""A world's verification: which verifier code can run at all (parsed, never executed), the verdict a code
verifier's value makes, and SQL mode without a judge or with one over real HTTP on loopback."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from awm_runtime import Message, ToolCall
from awm_runtime.models import ModelClient, ModelConfig, reset_limiters
from awm_runtime.testing import FakeOpenAI, Reply
from awm_runtime.verifiers import Judge, SandboxResult
from awm_runtime.worlds import VerifierDef, WorldOptions, load_worlds
from awm_runtime.worlds._verify import _read, code_problem, code_verdict


def code(text: str) -> VerifierDef:
    return VerifierDef(mode="code", code=text)


@pytest.mark.parametrize(("text", "problem"), [
    ("def verify_task_completion(initial_db_path, final_db_path):\n    return {}\n", None),
    ("async def verify_task_completion(final_db_path):\n    return {}\n", None),
    ("def verify_task_completion(:\n", "verifier code does not parse: invalid syntax (line 1)"),
    ("x = 1\x00\n", "verifier code does not parse: source code string cannot contain null bytes"),  # no line
    ("1" + "+1" * 200_000, "verifier code does not parse: RecursionError: maximum recursion depth exceeded"),
    ("def helper():\n    pass\n", "verifier code defines no function 'verify_task_completion'"),
    ("class C:\n    def verify_task_completion(self):\n        pass\n",
     "verifier code defines no function 'verify_task_completion'"),
])
def test_which_verifier_code_can_run(text: str, problem: str | None) -> None:
    said = code_problem(code(text))
    assert said == problem or (problem is not None and said is not None and said.startswith(problem + " during")), said


@given(st.text(max_size=200))
def test_any_text_is_judged_without_raising(text: str) -> None:
    said = code_problem(code(text))
    assert said is None or (said.startswith("verifier code ") and "\n" not in said)


@pytest.mark.parametrize(("value", "result"), [
    ({"result": "complete", "why": "x"}, "complete"),
    ({"result": "others"}, "others"),
    ({"result": "done"}, "judge_error"),
    (["complete"], "judge_error"),
    (None, "judge_error"),
])
def test_a_code_verifiers_value_makes_its_verdict(value: Any, result: str) -> None:
    verdict = code_verdict(SandboxResult(value=value, error=None, elapsed_ms=3.0), "f: ")
    assert (verdict.result, verdict.mode, verdict.elapsed_ms) == (result, "code", 3.0)
    if result == "judge_error":
        assert verdict.error == f"f: verifier returned {str(value)!r}, not a dict with 'result'"
    else:
        assert verdict.detail == value and verdict.error is None


@pytest.mark.parametrize(("fault", "result"), [("raised", "verifier_raised"), ("verifier", "judge_error"),
                                               ("sandbox", "verifier_error"), (None, "verifier_error")])
def test_a_verification_that_returned_nothing_is_put_down_to_whose_fault_it_is(fault: Any, result: str) -> None:
    verdict = code_verdict(SandboxResult(value=None, error="boom", elapsed_ms=1.0, fault=fault), "f: ")
    assert (verdict.result, verdict.error) == (result, "f: boom")


async def sql_verdict(trap_dir: Path, judge: Judge | None) -> Any:
    world = load_worlds(trap_dir, options=WorldOptions(verifier="sql", workers=1), judge=judge)
    task = next(t for t in world.tasks() if t.scenario == "trap" and t.task_idx == 0)
    try:
        session = await world.open(task, episode_id="sql")
        try:
            await session.call_tool(ToolCall(id="c1", name="add_item", arguments={"name": "apple"}))
            return await session.verify("Added apple.", [Message(role="user", content=task.text, source="system")])
        finally:
            await session.close()
    finally:
        await world.aclose()


async def test_sql_mode_without_a_judge_says_it_needs_one(trap_dir: Path) -> None:
    verdict = await sql_verdict(trap_dir, None)
    assert (verdict.result, verdict.mode) == ("judge_error", "sql")
    assert verdict.error == "SQL-mode verification needs a judge model (--judge ALIAS)"


async def test_sql_mode_asks_the_judge_and_counts_the_evidences_time(trap_dir: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY", "k-judge")
    reset_limiters()
    with FakeOpenAI(key="k-judge", script=[Reply(content='{"classification": "complete", "reason": "one more"}')]
                    ) as server:
        client = ModelClient(ModelConfig(alias="judge", model="openai/judge-7b", api_base=server.url,
                                         api_key_env="JUDGE_KEY", timeout_s=10), "judge")
        verdict = await sql_verdict(trap_dir, Judge(client, name="judge"))
        [request] = server.requests
    assert (verdict.result, verdict.mode, verdict.error) == ("complete", "sql", None)
    assert verdict.elapsed_ms > 0
    assert '"items_after": 3' in request["messages"][-1]["content"]


async def verdicts(trap_dir: Path, reuse: bool) -> list[tuple[str, str | None]]:
    """Each trap task's verdict after one item is added, in a world that verifies in forks or in kept workers."""
    world = load_worlds(trap_dir, options=WorldOptions(workers=1, verifier_reuse=reuse))
    out = []
    try:
        for idx in (0, 1, 2, 5, 0):
            task = next(t for t in world.tasks() if t.scenario == "trap" and t.task_idx == idx)
            session = await world.open(task, episode_id=f"v{idx}")
            try:
                await session.call_tool(ToolCall(id="c1", name="add_item", arguments={"name": "apple"}))
                verdict = await session.verify("", [])
                out.append((verdict.result, verdict.error and verdict.error.split(": ", 2)[-1]))
                assert (await session.verify("", [])).result == verdict.result  # a DB is verified as it is left
            finally:
                await session.close()
    finally:
        await world.aclose()
    return out


async def test_kept_verifier_workers_give_the_verdicts_a_fork_gives(trap_dir: Path) -> None:
    """`verifier_reuse`: the DBs go as bytes (the final one read through the scenario's descriptor, no snapshot);
    the verdicts, errors included, are the fork's. A verifier that writes its DB is refused in both."""
    forked = await verdicts(trap_dir, reuse=False)
    assert [r for r, _ in forked] == ["complete", "complete", "verifier_raised", "verifier_raised", "complete"]
    assert await verdicts(trap_dir, reuse=True) == forked


@pytest.mark.parametrize("size", [0, 3, 5000, 1 << 21])
def test_a_final_db_is_read_whole_whatever_size_was_expected(tmp_path: Path, size: int) -> None:
    """The bytes a kept verifier worker is sent: read in one call at the size its stat gave, and whole even if the
    file is longer by then."""
    data = bytes(range(256)) * 64
    path = tmp_path / "final.db"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _read(fd, size) == data
    finally:
        os.close(fd)
