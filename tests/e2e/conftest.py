"""Run directories made by real awm-run runs (in process: tests/e2e/_inproc.py), shared by the report and viewer
tests of a session; and the helpers that call our commands."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e._inproc import Result, run_cli

# Small on purpose: two scenarios x five tasks per arm, and two GRPO steps of two groups of four.
TWO_ARM = ("--policy", "sim/novice", "--arm", "solo:expert=none", "--arm", "asked:expert=sim/oracle",
           "--scenarios", "codeforge_devtools,homehub_smart_home", "--tasks", "0-4")
GROUPS = ("--policy", "sim/novice", "--group-size", "4", "--expert-ratio", "adaptive",
          "--scenarios", "codeforge_devtools", "--tasks", "0-1", "--repeats", "2")


def awm_command(name: str, *args: str, timeout: float = 600) -> Result:
    """One of our console commands (run, report, fork, export ...) called in this process, with its output
    captured and the process put back as it was (tests/e2e/_inproc.py): for tests whose subject is what the
    command writes and prints. A command past `timeout` ends the test process, with every thread's stack."""
    return run_cli(name, *args, timeout=timeout)


def awm_subprocess(name: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run one of our console commands (run, report, view ...) in a subprocess, as a user would."""
    code = f"from awm_runtime.cli import {name}_main; raise SystemExit({name}_main())"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ})


def _make_run(tmp_path_factory: pytest.TempPathFactory, name: str, args: tuple[str, ...]) -> Path:
    out = tmp_path_factory.mktemp(name) / "run"
    proc = awm_command("run", "--out", str(out), "--quiet", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"awm-report {out} --html" in proc.stderr and f"awm-view {out}" in proc.stderr, proc.stderr[-1000:]
    return out


@pytest.fixture(scope="session")
def awm() -> Callable[..., Result]:
    """`awm("report", RUN, "--html", FILE)`: one of our commands, in process (see `awm_command`)."""
    return awm_command


@pytest.fixture(scope="session")
def two_arm_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _make_run(tmp_path_factory, "two_arm", TWO_ARM)


@pytest.fixture(scope="session")
def group_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _make_run(tmp_path_factory, "groups", GROUPS)
