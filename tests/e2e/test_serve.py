"""awm-serve and remote worlds as a user runs them: awm-serve in its own process, awm-run against it."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.testing import FakeOpenAI, Reply
from awm_runtime.worlds import load_local_worlds
from tests.e2e.test_awm_run import awm_run, records

BUILTIN = load_local_worlds("builtin")
SOLUTIONS = {t.text: BUILTIN.solution(t) for t in BUILTIN.tasks()}


def start_serve(*args: str) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-c", "from awm_runtime.cli import serve_main; raise SystemExit(serve_main())",
           "--port", "0", "--max-lifetime", "500", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()  # printed once it listens
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        raise AssertionError(f"awm-serve did not start: {proc.communicate(timeout=30)[1][-2000:]}")
    return proc, url


@contextlib.contextmanager
def serving(*args: str) -> Iterator[str]:
    """awm-serve with `args` for the duration of the block: its base URL; stopped afterwards."""
    proc, url = start_serve(*args)
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serving("--mcp") as url:
        yield url


def test_the_oracle_completes_every_task_over_openenv(server: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = awm_run("--worlds", f"openenv+{server}", "--policy", "sim/oracle", "--expert", "none", "--out", str(out),
                   "--quiet")
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) == 60 and all(r["outcome"] == "complete" and r["verdict"] == "complete" for r in recs)
    assert json.loads((out / "summary.json").read_text())["arms"]["main"]["completion_rate"] == 1.0
    assert json.loads((out / "manifest.json").read_text())["worlds"] == f"openenv+{server}"


def judge_from_trajectory(request: dict[str, Any]) -> Reply:
    """A loopback judge: complete iff every reference step appears in the trajectory as a call that worked."""
    prompt = str(request["messages"][-1].get("content"))
    if len(request["messages"]) < 2 or "<<<EPISODE-DATA " not in prompt:
        return Reply(content="ok")  # the preflight's tiny completion
    task = prompt.split("Task:\n", 1)[1].split("\n\nCriteria from", 1)[0]
    boundary = prompt.split("\n<<<EPISODE-DATA ", 1)[1].split("\n", 1)[0]
    data = prompt.split(f"\n<<<EPISODE-DATA {boundary}\n", 1)[1].split(f"\nEPISODE-DATA {boundary}>>>", 1)[0]
    entries = json.loads(data)["trajectory"]
    worked = []
    for entry, after in zip(entries, [*entries[1:], {}], strict=True):
        for call in entry.get("calls", ()):
            if after.get("from") == "world" and not after.get("text", "").startswith(
                    ("Error calling", "Unknown tool", "Input validation error")):
                worked.append((call["tool"], json.loads(call["arguments"])))
    steps, found = list(SOLUTIONS[task].steps), 0
    for call in worked:
        if found < len(steps) and call == steps[found]:
            found += 1
    label = "complete" if found == len(steps) else "incomplete"
    return Reply(content=json.dumps({"classification": label, "reason": f"{found}/{len(steps)} steps done"}))


def test_the_oracle_completes_every_task_over_mcp_and_the_judge_decides(server: str, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task": t.text, "id": f"{t.scenario}/{t.task_idx}"}) + "\n"
                             for t in BUILTIN.tasks() if t.scenario == "shopfront_commerce"))
    with FakeOpenAI(key="judge-key-14", models=("judge-14",), responder=judge_from_trajectory,
                    max_lifetime_s=400) as judge, \
            FakeOpenAI(key="idle-key-14", models=("idle-14",), default=Reply(content="All done."),
                       max_lifetime_s=400) as idle:
        config = tmp_path / "awm.toml"
        config.write_text(f'[models.loop-judge]\nmodel = "openai/judge-14"\napi_base = "{judge.url}"\n'
                          f'api_key_env = "JUDGE_14"\n\n[models.idle]\nmodel = "openai/idle-14"\n'
                          f'api_base = "{idle.url}"\napi_key_env = "IDLE_14"\n')
        env = {"JUDGE_14": "judge-key-14", "IDLE_14": "idle-key-14"}
        runs = {}
        for policy in ("sim/oracle", "idle"):
            out = tmp_path / policy.replace("/", "-")
            proc = awm_run("--worlds", f"mcp+{server}/mcp/shopfront_commerce", "--tasks-file", str(tasks),
                           "--policy", policy, "--expert", "none", "--judge", "loop-judge", "--config", str(config),
                           "--out", str(out), "--quiet", env=env)
            assert proc.returncode == 0, proc.stderr
            runs[policy] = records(out)
        judgements = [r for r in judge.requests if "<<<EPISODE-DATA" in str(r["messages"][-1]["content"])]
        assert len(judgements) == 20  # one per episode (the rest are the preflight's)
    oracle, idle_recs = runs["sim/oracle"], runs["idle"]
    assert len(oracle) == 10 and all(r["outcome"] == "complete" and r["verdict"] == "complete" for r in oracle)
    assert {(r["scenario"], r["task_idx"]) for r in oracle} == {("shopfront_commerce", i) for i in range(10)}
    assert all(r["tool_calls"] >= 1 and r["verdict_detail"]["mode"] == "sql" for r in oracle)
    assert len(idle_recs) == 10 and all(r["outcome"] == "incomplete" and r["tool_calls"] == 0 for r in idle_recs)
    written = "".join(p.read_text() for run in ("sim-oracle", "idle") for p in (tmp_path / run).iterdir()
                      if p.is_file())
    assert "judge-key-14" not in written and "idle-key-14" not in written


def test_the_oracle_completes_tasks_over_mcp_stdio(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task": t.text, "id": f"{t.scenario}/{t.task_idx}"}) + "\n"
                             for t in BUILTIN.tasks() if t.scenario == "homehub_smart_home" and t.task_idx < 3))
    command = f"{sys.executable} -c 'from awm_runtime.cli import serve_main; raise SystemExit(serve_main())' " \
              "--stdio homehub_smart_home --world-workers 1"
    out = tmp_path / "run"
    proc = awm_run("--worlds", f"mcp+stdio:{command}", "--tasks-file", str(tasks), "--policy", "sim/oracle",
                   "--expert", "none", "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    # No verifier and no judge: nothing can score these episodes. They are `unverified`: no one's fault, never an
    # error, and out of the rates; the summary counts them.
    assert len(recs) == 3 and all((r["outcome"], r["verdict"], r["end_reason"], r["error"]) ==
                                  ("unverified", "no_verifier", "no_verifier", None) for r in recs)
    arm = json.loads((out / "summary.json").read_text())["arms"]["main"]
    assert (arm["unverified"], arm["infra_errors"], arm["accountable_episodes"]) == (3, 0, 0)
    assert all(r["tool_calls"] == len(SOLUTIONS[r["task"]].steps) and r["tool_errors"] == 0 for r in recs)


@pytest.mark.parametrize(("args", "message"), [
    (("--worlds", "openenv+http://127.0.0.1:9"), "awm-run: error: --worlds openenv+http://127.0.0.1:9: cannot connect"),
    (("--worlds", "mcp+http://127.0.0.1:9/mcp/x"), "awm-run: error: --worlds mcp+http://127.0.0.1:9/mcp/x: an MCP "
                                                  "world needs --tasks-file FILE"),
    (("--worlds", "builtin", "--tasks-file", "t.jsonl"), "awm-run: error: --tasks-file is for MCP worlds"),
    (("--worlds", "gopher+http://x"), "awm-run: error: "),
])
def test_bad_remote_worlds_are_one_line_errors(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    proc = awm_run(*args, "--out", str(tmp_path / "x"), "--quiet", "--preflight", "off", timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(message) and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_exclude_trivial_needs_local_worlds(server: str, tmp_path: Path) -> None:
    proc = awm_run("--worlds", f"openenv+{server}", "--exclude-trivial", "--out", str(tmp_path / "x"), "--quiet")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"awm-run: error: --exclude-trivial needs local worlds (builtin or a directory), "
                                   f"not openenv+{server}")


def test_awm_serve_rejects_bad_input_in_one_line(tmp_path: Path) -> None:
    cmd = [sys.executable, "-c", "from awm_runtime.cli import serve_main; raise SystemExit(serve_main())"]
    for args, message in [(("--worlds", str(tmp_path / "nowhere")), "no such directory"),
                          (("--stdio", "atlantis"), "--stdio atlantis: no such scenario in builtin"),
                          (("--world-disk-mib", "0"), "--world-disk-mib: a scenario needs at least 16 MiB, got 0")]:
        proc = subprocess.run([*cmd, *args, "--port", "0", "--max-lifetime", "30"], capture_output=True, text=True,
                              timeout=120, env={**os.environ})
        assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_awm_bench_serve_smoke() -> None:
    cmd = [sys.executable, "-c", "from awm_runtime.cli import bench_main; raise SystemExit(bench_main())", "serve",
           "--sessions", "40", "--idle", "40", "--resets", "20"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["ok"] == 40 and result["failed"] == 0 and result["idle"]["failed"] == 0
    assert result["reset_ms"]["p50"] > 0 and result["idle"]["per_session_kib"] > 0
