"""The in-process runner of our commands (tests/e2e/_inproc.py): each call starts as a fresh process would, and
leaves this process as it found it."""

from __future__ import annotations

import asyncio
import ctypes
import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import structlog

from awm_runtime.models import _limits, _local, _reasoning
from tests.e2e._inproc import FRESH, run_cli

SMALL = ("--policy", "sim/novice", "--expert", "none", "--scenarios", "codeforge_devtools", "--tasks", "0-1",
         "--quiet")


def _dumpable() -> int:
    return int(ctypes.CDLL(None, use_errno=True).prctl(3, 0, 0, 0, 0))


def _state() -> dict[str, Any]:
    """What a command could leave changed in this process."""
    import importlib
    import resource

    return {"env": dict(os.environ), "cwd": os.getcwd(), "argv": list(sys.argv),
            "signals": {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)},
            "structlog": (structlog.is_configured(), structlog.get_config()),
            "root": (logging.getLogger().level, list(logging.getLogger().handlers)),
            "dumpable": _dumpable(), "nofile": resource.getrlimit(resource.RLIMIT_NOFILE),
            "modules": {(m, a): _held(getattr(importlib.import_module(m), a)) for m, a, _ in FRESH},
            "streams": (sys.stdout, sys.stderr)}


def _held(value: Any) -> Any:
    """A registry as the object it is and what it holds, so that a swap or a change both show."""
    return (id(value), value.copy() if isinstance(value, dict | set) else value)


def _first_user_text(out: Path) -> str:
    record = json.loads((out / "episodes.jsonl").read_text().splitlines()[0])
    return next(m["content"] for m in record["messages"] if m.get("role") == "user")


def test_two_runs_in_a_row_with_different_settings_do_not_leak(tmp_path: Path) -> None:
    before = _state()
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "task.md").write_text("PREFIXED-TASK: $task\n")
    first = run_cli("run", "--out", str(tmp_path / "a"), "--prompts", str(prompts), "--json", *SMALL,
                    env={"AWM_CONCURRENCY": "3"})
    assert first.returncode == 0, first.stderr[-3000:]
    assert json.loads(first.stdout)["concurrency"] == 3  # --json: stdout is the summary alone
    assert _first_user_text(tmp_path / "a").startswith("PREFIXED-TASK: ")
    assert _state() == before  # AWM_PROMPTS_DIR, the limiters, logging, signals, dumpable: all as they were

    second = run_cli("run", "--out", str(tmp_path / "b"), *SMALL)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "PREFIXED-TASK" not in _first_user_text(tmp_path / "b")  # the first run's --prompts is gone
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["concurrency"] != 3  # and so is its AWM_CONCURRENCY
    assert not second.stdout.lstrip().startswith("{")  # a table this time, not the first run's JSON
    assert f"run directory: {tmp_path / 'b'}" in second.stderr and str(tmp_path / "a") not in second.stderr
    assert _state() == before


def test_a_command_that_raises_leaves_the_process_as_it_was(tmp_path: Path) -> None:
    before = _state()

    def main(argv: list[str]) -> int:
        from awm_runtime._log import console_logging
        from awm_runtime.isolation import mark_private

        console_logging()
        mark_private()
        os.environ["AWM_LEAKED"] = "1"
        os.chdir(tmp_path)
        sys.argv = ["leaked"]
        signal.signal(signal.SIGTERM, lambda *_: None)
        _limits._limiters["leaked"] = object()  # type: ignore[index]
        from awm_runtime.logs._redact import register_secrets

        register_secrets(["leaked-key-0001"])
        _local._servers.clear()
        _reasoning._warned.add(("leaked", "alias"))
        structlog.contextvars.bind_contextvars(leaked=True)

        async def go() -> None:
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, lambda: None)  # never removed
            raise RuntimeError("boom")

        print("to stdout", argv)
        subprocess.run(["sh", "-c", "echo from a child >&2"], check=True)
        asyncio.run(go())
        return 0

    result = run_cli(main, "x")
    assert result.returncode == 1
    assert "to stdout ['x']" in result.stdout
    assert "from a child" in result.stderr  # fd 2 of children is captured, as a subprocess's pipe would be
    assert "RuntimeError: boom" in result.stderr and "Traceback" in result.stderr
    assert _state() == before
    assert structlog.contextvars.get_contextvars() == {}


def test_exit_codes_and_a_usage_error_come_back_as_a_subprocess_would_give_them(tmp_path: Path) -> None:
    bad = run_cli("run", "--tasks", "zero")
    assert bad.returncode == 2 and "awm-run: error:" in bad.stderr and bad.stdout == ""

    def exits(argv: list[str]) -> int:
        raise SystemExit(argv[0] if argv[0] != "none" else None)

    assert run_cli(exits, "none").returncode == 0
    text = run_cli(exits, "a message")
    assert (text.returncode, text.stderr.strip()) == (1, "a message")
    assert run_cli(lambda argv: 7).returncode == 7
    missing = run_cli("report", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "awm-report: error:" in missing.stderr


def test_a_call_past_its_timeout_ends_the_process_with_its_stacks(tmp_path: Path) -> None:
    code = ("import time; from tests.e2e._inproc import run_cli\n"
            "def hangs(argv):\n    time.sleep(600)\n"
            "run_cli(hangs, timeout=2)\nprint('not reached')")
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode != 0 and "not reached" not in proc.stdout
    assert "Timeout" in proc.stderr and "in hangs" in proc.stderr, proc.stderr[-2000:]
