"""`--tasks-file`: one task a line; ids of the form SCENARIO/N key the task, other ids keep the row's place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from awm_runtime._errors import ConfigError
from awm_runtime.verifiers import Criteria
from awm_runtime.worlds.remote import read_tasks_file


def write(tmp_path: Path, *rows: object) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def test_ids_key_tasks_when_they_name_a_scenario_and_index(tmp_path: Path) -> None:
    path = write(tmp_path, {"task": "A", "id": "Shopfront Commerce/3"}, {"task": "B", "id": "e_commerce_33:0"},
                 "", {"task": "C", "id": "ticket-881"}, {"task": "D"})
    tasks = read_tasks_file(path, "shop")
    assert [(t.key, t.text, t.scenario_title, t.kind) for t in tasks] == [
        (("shopfront_commerce", 3), "A", "shopfront_commerce", "app"),
        (("e_commerce_33", 0), "B", "e_commerce_33", "app"),
        (("shop", 2), "C", "shop", "app"), (("shop", 3), "D", "shop", "app")]
    # An MCP world names itself in prompts (the server's name), never after a task's id.
    named = read_tasks_file(path, "shop", title="Shop Server", kind="mcp")
    assert {(t.scenario_title, t.kind) for t in named} == {("Shop Server", "mcp")}


def test_success_and_failure_criteria_are_read_for_the_judge(tmp_path: Path) -> None:
    path = write(tmp_path, {"task": "A", "success_criteria": "a is done", "failure_criteria": ["b", " "]},
                 {"task": "B"})
    criteria: dict[tuple[str, int], Criteria] = {}
    read_tasks_file(path, "s", criteria=criteria)
    assert criteria == {("s", 0): Criteria(success=("a is done",), failure=("b",))}
    bad = write(tmp_path, {"task": "A", "success_criteria": {"not": "a list"}})
    with pytest.raises(ConfigError, match=r'tasks.jsonl:1: "success_criteria" must be a string or a list of strings'):
        read_tasks_file(bad, "s", criteria={})


@pytest.mark.parametrize(("rows", "message"), [
    (('{"task": "A"', ), r"tasks.jsonl:1: not valid JSON"),
    (({"id": "x"},), r"tasks.jsonl:1: each line needs \"task\": a non-empty string"),
    (({"task": "   "},), r"tasks.jsonl:1: each line needs"),
    (([1, 2],), r"tasks.jsonl:1: each line needs"),
    (({"task": "A", "id": "s/1"}, {"task": "B", "id": "s/1"}), r"tasks.jsonl:2: task s/1 already given on line 1"),
    ((), r"tasks.jsonl: no tasks"),
])
def test_bad_files_are_one_line_config_errors(tmp_path: Path, rows: tuple[object, ...], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        read_tasks_file(write(tmp_path, *rows), "w")
    with pytest.raises(ConfigError, match="No such file"):
        read_tasks_file(tmp_path / "missing.jsonl", "w")
