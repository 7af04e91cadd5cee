"""awm-worlds check's verdict when nothing could be checked: exit 2 with where the data is at fault."""

from __future__ import annotations

from typing import Any

from awm_runtime.cli._worlds import nothing_ran


def report(loading: int, scenarios: list[Any], problems: list[dict[str, Any]]) -> dict[str, Any]:
    return {"worlds": "/d", "summary": {"loading_scenarios": loading}, "scenarios": scenarios, "problems": problems}


def problem(file: str, line: int | None, message: str) -> dict[str, Any]:
    return {"file": file, "line": line, "scenario": "?", "task_idx": None, "message": message}


def test_a_check_that_ran_something_is_not_refused() -> None:
    assert nothing_ran(report(1, [{}], [problem("gen_tasks.jsonl", 3, "bad")]), "*") is None


def test_nothing_ran_names_located_problems_first() -> None:
    problems = [problem("gen_envs.jsonl", None, "cannot run"),
                *(problem("gen_tasks.jsonl", n, f"not valid JSON ({n})") for n in (1, 2, 3))]
    said = nothing_ran(report(0, [{}], problems), "*")
    assert said == ("no scenario of /d can run, so nothing was checked: /d/gen_tasks.jsonl:1: not valid JSON (1); "
                    "/d/gen_tasks.jsonl:2: not valid JSON (2); /d/gen_tasks.jsonl:3: not valid JSON (3) "
                    "(and 1 more)")


def test_a_selection_that_matches_nothing_says_so() -> None:
    said = nothing_ran(report(0, [], []), "shop*")
    assert said == "no scenario of /d matches --scenarios 'shop*': nothing was checked"
