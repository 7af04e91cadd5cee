"""A newcomer's first hour: each rough edge of issue 29, as a user meets it in a terminal or a script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from awm_runtime._extras import REPORT_INSTALL
from awm_runtime.worlds import BUILTIN_DATA
from tests.e2e.test_awm_run import awm_run

QUICK = ("--scenarios", "homehub_smart_home", "--tasks", "0", "--quiet")


def command(name: str, *args: str, before: str = "") -> subprocess.CompletedProcess[str]:
    code = f"{before}from awm_runtime.cli import {name}_main; raise SystemExit({name}_main())"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ})


@pytest.mark.parametrize(("name", "args", "says"), [
    ("run", ("--repeats", "x"), "awm-run: error: argument --repeats: 'x' is not an integer (see awm-run --help)"),
    ("run", ("--no-such-flag",), "awm-run: error: unrecognized arguments: --no-such-flag (see awm-run --help)"),
    ("worlds", ("lst",), "awm-worlds: error: argument command: invalid choice: 'lst'"),
    ("report", (), "awm-report: error: the following arguments are required"),
    ("serve", ("--port", "many"), "awm-serve: error: argument --port: invalid int value: 'many'"),
])
def test_usage_errors_are_one_line(name: str, args: tuple[str, ...], says: str) -> None:
    proc = command(name, *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith(says), proc.stderr


def test_out_on_an_existing_file_is_one_line(tmp_path: Path) -> None:
    taken = tmp_path / "notes.txt"
    taken.write_text("mine\n")
    proc = awm_run("--out", str(taken), *QUICK)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [f"awm-run: error: --out {taken}: a file of that name exists; --out "
                                                "names the run directory (choose a new path, or an earlier run's "
                                                "directory with --resume)"]
    assert taken.read_text() == "mine\n"  # nothing lost
    under = awm_run("--out", str(taken / "run"), *QUICK)
    assert under.returncode == 2 and under.stderr.strip().splitlines() == [
        f"awm-run: error: --out {taken / 'run'}: {taken} is a file, so the run directory cannot be made under it"]


def test_the_closing_hint_says_what_html_needs_when_matplotlib_is_missing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    hidden = "import sys; sys.modules['matplotlib'] = None; "  # as after the README's install, without [report]
    proc = command("run", "--out", str(out), "--policy", "sim/oracle", "--expert", "none", *QUICK, before=hidden)
    assert proc.returncode == 0, proc.stderr
    hint = next(line for line in proc.stderr.splitlines() if line.startswith("report: "))
    assert hint == (f"report: awm-report {out} --html {out / 'report.html'} (install the report extra first: "
                    f"{REPORT_INSTALL})  ·  browse: awm-view {out}")
    with_it = command("run", "--out", str(tmp_path / "again"), "--policy", "sim/oracle", "--expert", "none", *QUICK)
    assert "install the report extra" not in with_it.stderr and "awm-report" in with_it.stderr


def test_worlds_list_never_cuts_a_scenario_name(tmp_path: Path) -> None:
    long = "regional_logistics_and_cold_chain_warehouse_management_with_customs_brokerage_portal"
    assert len(long) > 80
    rows = [json.loads(line) for line in (BUILTIN_DATA / "gen_scenario.jsonl").read_text().splitlines()]
    (tmp_path / "gen_scenario.jsonl").write_text(json.dumps({**rows[0], "name": long}) + "\n")
    (tmp_path / "gen_tasks.jsonl").write_text(json.dumps({"scenario": long, "tasks": ["a task"]}) + "\n")
    for name in ("gen_envs", "gen_db", "gen_sample"):  # present and empty: the scenario is listed as not runnable
        (tmp_path / f"{name}.jsonl").write_text("")
    proc = command("worlds", "list", "--worlds", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert long in proc.stdout
