"""The AWM loader: normalised joins, first-wins verifiers, missing verifiers and broken rows, lazy rows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from awm_runtime import ConfigError, WorldError
from awm_runtime.worlds import load_dataset, normalize_scenario


@pytest.mark.parametrize(("raw", "norm"), [
    ("SurveyMonkey Apply", "surveymonkey_apply"),
    ("  DocuSign: e-Signature / Workflow  ", "docusign_e_signature_workflow"),
    ("__a__b__", "a_b"),
    ("Caf\u00e9 2.0", "caf_2_0"),
])
def test_normalize(raw: str, norm: str) -> None:
    assert normalize_scenario(raw) == norm


def _rewrite(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def copy(tiny_dir: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "ds"
    shutil.copytree(tiny_dir, dst)
    return dst


def test_joins_on_normalised_name(copy: Path) -> None:
    rows = _rows(copy / "gen_tasks.jsonl")
    rows[0]["scenario"] = "tiny-NOTES"  # a different spelling of the same scenario
    _rewrite(copy / "gen_tasks.jsonl", rows)
    ds = load_dataset(copy)
    assert ds.scenarios["tiny_notes"].tasks and not ds.problems


def test_first_verifier_row_wins_and_missing_is_reported(copy: Path) -> None:
    rows = _rows(copy / "gen_verifier.pure_code.jsonl")
    dup = dict(rows[0], verification={"code": "def verify_x():\n    return {}"})
    rows = [rows[0], dup, rows[1]]  # task 2 loses its verifier; task 0 has a later duplicate
    _rewrite(copy / "gen_verifier.pure_code.jsonl", rows)
    (copy / "gen_verifier.jsonl").unlink()
    ds = load_dataset(copy)
    verifier = ds.verifier("tiny_notes", 0, "code")
    assert verifier is not None and "verify_task_completion" in verifier.code
    assert [str(p) for p in ds.problems] == [
        "gen_verifier.pure_code.jsonl: tiny_notes: no verifier row for task 2"]


def test_broken_rows_are_reported_not_fatal(copy: Path) -> None:
    with (copy / "gen_tasks.jsonl").open("a") as fh:
        fh.write("{not json\n")
        fh.write(json.dumps({"scenario": "ghost", "tasks": ["x"]}) + "\n")
    ds = load_dataset(copy)
    messages = [str(p) for p in ds.problems]
    assert any("gen_tasks.jsonl:2" in m and "not valid JSON" in m for m in messages)
    assert "gen_envs.jsonl: ghost: cannot run: no usable row in gen_envs.jsonl, gen_db.jsonl, gen_sample.jsonl" \
        in messages
    assert ds.scenarios["tiny_notes"].runnable and not ds.scenarios["ghost"].runnable


def test_missing_directory_or_files_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_dataset(tmp_path / "nope")
    with pytest.raises(ConfigError, match=r"missing gen_envs\.jsonl, gen_db\.jsonl, gen_sample\.jsonl"):
        load_dataset(tmp_path)


def test_gen_spec_is_optional_and_read_when_present(copy: Path) -> None:
    ds = load_dataset(copy)
    spec = ds.spec("tiny_notes")
    assert spec is not None and "create_note" in [e["operation_id"] for g in spec["api_groups"] for e in g["endpoints"]]
    (copy / "gen_spec.jsonl").unlink()
    ds = load_dataset(copy)
    assert ds.spec("tiny_notes") is None and not ds.problems


def test_scenario_without_code_is_reported_and_not_runnable(copy: Path) -> None:
    (copy / "gen_envs.jsonl").write_text(json.dumps({"scenario": "Tiny Notes", "full_code": ""}) + "\n")
    ds = load_dataset(copy)
    assert not ds.scenarios["tiny_notes"].runnable
    assert any(p.file == "gen_envs.jsonl" and "missing or empty" in p.message for p in ds.problems)


def test_duplicate_rows_keep_the_first_and_say_so(copy: Path) -> None:
    rows = _rows(copy / "gen_tasks.jsonl")
    _rewrite(copy / "gen_tasks.jsonl", [rows[0], dict(rows[0], tasks=["other"])])
    ds = load_dataset(copy)
    assert ds.scenarios["tiny_notes"].tasks[0].startswith("Create a note")
    assert [str(p) for p in ds.problems] == [
        "gen_tasks.jsonl:2: tiny_notes: duplicate row; the first usable one is kept"]


def test_sql_verifier_keeps_its_raw_response(copy: Path) -> None:
    from awm_runtime.verifiers import parse_criteria

    verifier = load_dataset(copy).verifier("tiny_notes", 0, "sql")
    assert verifier is not None
    criteria = parse_criteria(verifier.raw_response)
    assert verifier.mode == "sql" and criteria.success and criteria.failure


def test_a_scenario_without_a_gen_scenario_row_runs_without_its_description(copy: Path) -> None:
    (copy / "gen_scenario.jsonl").write_text(json.dumps({"name": "Someone Else", "description": "x"}) + "\n")
    ds = load_dataset(copy)
    sc = ds.scenarios["tiny_notes"]
    assert sc.runnable and sc.description == "" and sc.title == "Tiny Notes"
    assert [str(p) for p in ds.problems] == [
        "gen_envs.jsonl: someone_else: cannot run: no usable row in gen_envs.jsonl, gen_db.jsonl, gen_sample.jsonl, "
        "gen_tasks.jsonl",
        "gen_scenario.jsonl: tiny_notes: no row: runs without a description"]
    (copy / "gen_scenario.jsonl").unlink()  # no file at all: the same, said once
    ds = load_dataset(copy)
    assert ds.scenarios["tiny_notes"].runnable
    assert [str(p) for p in ds.problems] == ["gen_scenario.jsonl: *: file missing: scenarios run without descriptions"]


def test_a_scenario_needs_envs_db_sample_and_tasks_rows(copy: Path) -> None:
    (copy / "gen_sample.jsonl").write_text("")
    ds = load_dataset(copy)
    assert ds.scenarios["tiny_notes"].missing == ["gen_sample.jsonl"]
    assert [str(p) for p in ds.problems] == [
        "gen_sample.jsonl: tiny_notes: cannot run: no usable row in gen_sample.jsonl"]


def test_rows_are_read_from_disk_when_used_and_a_changed_file_is_an_error(copy: Path) -> None:
    ds = load_dataset(copy)
    sc = ds.scenarios["tiny_notes"]
    assert not hasattr(sc, "full_code") and sc.rows["gen_envs.jsonl"].line == 1
    assert "FastAPI" in ds.source("tiny_notes").full_code
    envs = copy / "gen_envs.jsonl"
    envs.write_text(json.dumps({"scenario": "Other", "full_code": "x"}) + "\n" + envs.read_text())
    with pytest.raises(WorldError, match=r"gen_envs\.jsonl:1: .*changed"):
        ds.source("tiny_notes")


def test_where_problems_puts_located_problems_first() -> None:
    from awm_runtime.worlds._format import LoadProblem, where_problems

    problems = [LoadProblem("gen_tasks.jsonl", "shop", "cannot run"),
                *(LoadProblem("gen_tasks.jsonl", "?", f"not valid JSON ({n})", line=n) for n in (1, 2, 3, 4))]
    assert where_problems(problems, "/d") == ("/d/gen_tasks.jsonl:1: ?: not valid JSON (1); /d/gen_tasks.jsonl:2: "
                                             "?: not valid JSON (2); /d/gen_tasks.jsonl:3: ?: not valid JSON (3) "
                                             "(and 2 more)")
    assert where_problems(problems[:1]) == "gen_tasks.jsonl: shop: cannot run"
