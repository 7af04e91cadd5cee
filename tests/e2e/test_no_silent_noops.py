"""Nothing done is never a success: a misspelled fork arm, an export the run cannot fill, an existing --out, and
a dataset whose tasks file is unusable are each refused (exit 2) with why, as a user meets them."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ALL_FORMATS = ("sft", "grpo", "pairs", "atif", "fork-pairs", "ask-labels")


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small run with no expert, no groups and no forks, with checkpoints (so it can be forked)."""
    from tests.e2e.conftest import awm_command

    out = tmp_path_factory.mktemp("plain") / "run"
    proc = awm_command("run", "--out", str(out), "--quiet", "--policy", "sim/novice", "--expert", "none",
                       "--scenarios", "codeforge_devtools", "--tasks", "0-2", "--checkpoint", "every")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def one_error(proc: Any, prog: str) -> str:
    errors = [line for line in proc.stderr.splitlines() if line.startswith(f"{prog}: error:")]
    assert proc.returncode == 2 and len(errors) == 1, (proc.returncode, proc.stderr[-3000:])
    return errors[0]


def test_a_misspelled_fork_arm_is_refused_before_anything_runs(plain_run: Path, tmp_path: Path,
                                                               awm: Callable[..., Any]) -> None:
    out = tmp_path / "fork"
    proc = awm("fork", str(plain_run), "--at", "1", "--arm", "ask", "--arm", "sloo", "--out", str(out))
    error = one_error(proc, "awm-fork")
    assert "unknown fork arm 'sloo' (did you mean 'solo'?)" in error and "ask, solo, continue" in error
    assert not out.exists()  # nothing ran, nothing was written
    # the built-in continue arm, and a custom name that says what it is, still run
    proc = awm("fork", str(plain_run), "--at", "1", "--arm", "continue", "--arm", "again:mode=continue",
               "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert set(json.loads(proc.stdout)["arms"]) == {"continue", "again"}


@pytest.mark.parametrize("fmt, extra, why", [
    ("sft", ("--outcomes", "unverified"), "no episode of"),
    ("grpo", (), "has no GRPO groups"),
    ("pairs", (), "has no expert advice"),
    ("atif", ("--arm", "nosuch"), "has no episode records of arm nosuch"),
    ("fork-pairs", (), "is not a fork run"),
    ("ask-labels", (), "is not a fork run"),
])
def test_an_export_the_run_cannot_fill_is_exit_2_with_why(plain_run: Path, tmp_path: Path, fmt: str,
                                                          extra: tuple[str, ...], why: str,
                                                          awm: Callable[..., Any]) -> None:
    out = tmp_path / f"{fmt}.jsonl"
    proc = awm("export", str(plain_run), "--format", fmt, *extra, "--out", str(out))
    assert why in one_error(proc, "awm-export")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no empty file, no partial, no rollouts file
    proc = awm("export", str(plain_run), "--format", fmt, *extra)  # to stdout: the same answer
    assert why in one_error(proc, "awm-export") and proc.stdout == ""


def test_every_export_format_is_covered() -> None:
    from awm_runtime.export import FORMATS

    assert set(FORMATS) == set(ALL_FORMATS)


def test_export_never_overwrites_without_force(plain_run: Path, tmp_path: Path, awm: Callable[..., Any]) -> None:
    out = tmp_path / "atif.jsonl"
    out.write_text("precious\n")
    proc = awm("export", str(plain_run), "--format", "atif", "--out", str(out))
    assert "already exists; pass --force" in one_error(proc, "awm-export")
    assert out.read_text() == "precious\n"
    proc = awm("export", str(plain_run), "--format", "atif", "--out", str(out), "--force")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and all("steps" in r for r in rows)
    assert [p.name for p in tmp_path.iterdir()] == ["atif.jsonl"]  # the partial file was renamed over it


@pytest.fixture()
def broken_tasks(tmp_path: Path) -> Path:
    """examples/tiny_world with its tasks file pretty-printed: valid JSON, but not one row per line."""
    data = tmp_path / "world"
    shutil.copytree(ROOT / "examples" / "tiny_world", data)
    rows = [json.loads(line) for line in (data / "gen_tasks.jsonl").read_text().splitlines() if line.strip()]
    (data / "gen_tasks.jsonl").write_text(json.dumps(rows, indent=2) + "\n")
    return data


def test_worlds_check_on_an_unusable_tasks_file_names_the_file_and_line(broken_tasks: Path,
                                                                         awm: Callable[..., Any]) -> None:
    proc = awm("worlds", "check", "--worlds", str(broken_tasks))
    error = one_error(proc, "awm-worlds")
    assert "can run, so nothing was checked" in error
    assert f"{broken_tasks}/gen_tasks.jsonl:1: not valid JSON" in error
    proc = awm("worlds", "check", "--worlds", str(broken_tasks), "--json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["summary"]["loading_scenarios"] == 0


def test_awm_run_on_an_unusable_tasks_file_names_the_file_and_line(broken_tasks: Path, tmp_path: Path,
                                                                   awm: Callable[..., Any]) -> None:
    proc = awm("run", "--worlds", str(broken_tasks), "--out", str(tmp_path / "run"), "--quiet")
    error = one_error(proc, "awm-run")
    assert "no tasks match" in error and f"{broken_tasks}/gen_tasks.jsonl:1: ?: not valid JSON" in error
