"""Loading AWM-1K rows: each kind of bad row is one located, one-line problem and never stops the load;
solutions files; the front door's choice between built-in, directory and remote worlds; the pinned split."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from awm_runtime import ConfigError
from awm_runtime.worlds import (
    BUILTIN_DATA,
    LoadProblem,
    load_dataset,
    load_local_worlds,
    load_split,
    load_worlds,
    resolve_worlds_dir,
)
from awm_runtime.worlds._load import iter_solutions, task_list


@pytest.fixture
def copy(tiny_dir: Path, tmp_path: Path) -> Path:
    return shutil.copytree(tiny_dir, tmp_path / "ds")


def append(path: Path, *lines: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))


OTHER = {"scenario": "Other"}
BAD_ROWS = [  # (file, row as written, the problem it is reported as, `:2:` standing for the row's line)
    ("gen_tasks.jsonl", "[1, 2]", "gen_tasks.jsonl:2: ?: row is not a JSON object"),
    ("gen_tasks.jsonl", '{"scenario": "a", "x": NaN}', "gen_tasks.jsonl:2: ?: not valid JSON (invalid)"),
    ("gen_tasks.jsonl", b'{"scenario": "\xff"}', "gen_tasks.jsonl:2: ?: not valid JSON ("),
    ("gen_tasks.jsonl", '{"tasks": ["x"]}', "gen_tasks.jsonl:2: ?: row has no 'scenario'"),
    ("gen_tasks.jsonl", '{"scenario": "  ", "tasks": ["x"]}', "gen_tasks.jsonl:2: ?: row has no 'scenario'"),
    ("gen_tasks.jsonl", json.dumps(dict(OTHER, tasks=[])),
     "gen_tasks.jsonl:2: other: 'tasks' is not a non-empty list of strings"),
    ("gen_tasks.jsonl", json.dumps(dict(OTHER, tasks=["ok", 3])),
     "gen_tasks.jsonl:2: other: 'tasks' is not a non-empty list of strings"),
    ("gen_db.jsonl", json.dumps(OTHER), "gen_db.jsonl:2: other: db_schema.tables missing"),
    ("gen_db.jsonl", json.dumps(dict(OTHER, db_schema={"tables": [{"name": "t"}]})),
     "gen_db.jsonl:2: other: table entry without ddl: {'name': 't'}"),
    ("gen_sample.jsonl", json.dumps(dict(OTHER, sample_data={})),
     "gen_sample.jsonl:2: other: sample_data.tables missing"),
    ("gen_envs.jsonl", json.dumps(dict(OTHER, full_code=7)), "gen_envs.jsonl:2: other: 'full_code' missing or empty"),
    ("gen_spec.jsonl", json.dumps(dict(OTHER, api_spec=[])), "gen_spec.jsonl:2: other: 'api_spec' missing"),
    ("gen_scenario.jsonl", '{"description": "x"}', "gen_scenario.jsonl:2: ?: row has no 'name'"),
    ("gen_verifier.pure_code.jsonl", json.dumps(dict(OTHER, task_idx=True, verification={"code": "x"})),
     "gen_verifier.pure_code.jsonl:2: other: row lacks task_idx or verification.code"),
    ("gen_verifier.pure_code.jsonl", json.dumps(dict(OTHER, task_idx=-1, verification={"code": "x"})),
     "gen_verifier.pure_code.jsonl:2: other: row lacks task_idx or verification.code"),
    ("gen_verifier.jsonl", json.dumps(dict(OTHER, task_idx=0, verification="x")),
     "gen_verifier.jsonl:2: other: row lacks task_idx or verification.code"),
    ("gen_verifier.jsonl", json.dumps({"scenario": "Tiny Notes", "task_idx": 7, "verification": {"code": "x"}}),
     "gen_verifier.jsonl: tiny_notes: verifier rows for tasks it does not have: 7"),
]


@pytest.mark.parametrize(("file", "row", "problem"), BAD_ROWS, ids=[f"{f}-{i}" for i, (f, _, _) in enumerate(BAD_ROWS)])
def test_each_bad_row_is_one_located_line_and_the_rest_still_loads(copy: Path, file: str, row: str | bytes,
                                                                    problem: str) -> None:
    path = copy / file
    rows = path.read_bytes().count(b"\n")
    with path.open("ab") as fh:
        fh.write(b"\n" + (row if isinstance(row, bytes) else row.encode()) + b"\n")  # after a blank line, skipped
    problem = problem.replace(":2:", f":{rows + 2}:")
    ds = load_dataset(copy)
    said = [str(p) for p in ds.problems]
    assert any(s.startswith(problem) for s in said), said
    assert all("\n" not in s for s in said)
    assert ds.scenarios["tiny_notes"].runnable and len(ds.scenarios["tiny_notes"].tasks) == 3


def test_a_sample_table_that_is_not_an_object_is_skipped(copy: Path) -> None:
    [row] = [json.loads(line) for line in (copy / "gen_sample.jsonl").read_text().splitlines()]
    seeded = load_dataset(copy).scenarios["tiny_notes"].seed_count
    row["sample_data"]["tables"].insert(0, "not a table")
    (copy / "gen_sample.jsonl").write_text(json.dumps(row) + "\n")
    ds = load_dataset(copy)
    assert ds.scenarios["tiny_notes"].seed_count == seeded and not ds.problems


@given(st.sets(st.integers(min_value=0, max_value=40)))
def test_task_lists_name_exactly_the_tasks_in_runs(idxs: set[int]) -> None:
    said = task_list(list(idxs))
    named: list[int] = []
    for part in filter(None, said.split(", ")):
        lo, _, hi = part.partition("-")
        assert not hi or int(hi) > int(lo)
        named += range(int(lo), int(hi or lo) + 1)
    assert named == sorted(idxs)
    runs = said.split(", ") if said else []
    assert all(int(b.split("-")[0]) > int(a.split("-")[-1]) + 1 for a, b in itertools.pairwise(runs))


def test_a_solutions_file_that_cannot_be_read_is_a_config_error(tmp_path: Path) -> None:
    problems: list[LoadProblem] = []
    for content, said in (("{nope", "cannot read solutions file"), ('{"a": 1}', "must hold a JSON list")):
        (tmp_path / "s.json").write_text(content)
        with pytest.raises(ConfigError, match=said):
            list(iter_solutions(tmp_path / "s.json", problems))
    with pytest.raises(ConfigError, match="cannot read solutions file"):
        list(iter_solutions(tmp_path / "missing.json", problems))


def test_a_malformed_solution_entry_is_a_problem_and_the_others_load(tmp_path: Path) -> None:
    rows = [{"scenario": "Tiny Notes", "task_idx": 0, "steps": [{"tool": "list_notes"}]},
            {"scenario": "Tiny Notes", "task_idx": "one", "steps": []},
            {"scenario": "Tiny Notes", "task_idx": 2, "steps": [{"arguments": {}}]},
            "not an object"]
    (tmp_path / "s.json").write_text(json.dumps(rows))
    problems: list[LoadProblem] = []
    [(sid, idx, solution)] = list(iter_solutions(tmp_path / "s.json", problems))
    assert (sid, idx, solution.steps, solution.final_answer) == ("tiny_notes", 0, (("list_notes", {}),), "")
    assert [(p.file, p.message.split(" (")[0]) for p in problems] == [("s.json", f"entry {n} is malformed")
                                                                      for n in (1, 2, 3)]


def test_a_solutions_file_replaces_the_datasets_own(tiny_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps([
        {"scenario": "Tiny Notes", "task_idx": 2, "steps": [], "final_answer": "none"},
        {"scenario": "Not Here", "task_idx": 0, "steps": []}]))
    world = load_local_worlds(tiny_dir, solutions=tmp_path / "s.json")
    task = next(t for t in world.tasks() if t.task_idx == 2)
    assert world.solution(task).final_answer == "none"
    assert "not_here" not in world.dataset.scenarios


def test_the_spec_chooses_the_worlds(tiny_dir: Path, tmp_path: Path) -> None:
    assert resolve_worlds_dir("builtin") == BUILTIN_DATA
    assert resolve_worlds_dir("~/w") == Path.home() / "w"
    assert load_local_worlds("builtin").name == "builtin"
    assert load_worlds(tiny_dir).name == tiny_dir.name
    with pytest.raises(ConfigError, match=r"--tasks-file is for MCP worlds .*, not builtin"):
        load_worlds("builtin", tasks_file=tmp_path / "t.jsonl")
    with pytest.raises(ConfigError, match="this command needs local worlds"):
        load_local_worlds("openenv+http://127.0.0.1:9")


def test_the_split_is_the_pinned_one_or_the_seeded_rule(tiny_dir: Path, tmp_path: Path) -> None:
    computed = load_split(load_worlds(tiny_dir))
    assert computed["train"] | computed["test"] == {("tiny_notes", i) for i in range(3)}
    assert not computed["train"] & computed["test"]
    pinned = shutil.copytree(tiny_dir, tmp_path / "pinned")
    (pinned / "split.json").write_text(json.dumps({"train": [["tiny_notes", 2]],
                                                   "test": [["tiny_notes", 0], ["tiny_notes", 1]]}))
    assert load_split(load_worlds(pinned)) == {"train": {("tiny_notes", 2)},
                                               "test": {("tiny_notes", 0), ("tiny_notes", 1)}}
