"""The expert-in-the-loop core as a user runs it: awm-run and awm-export as subprocesses."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.models.sim import EXPERT_MARKER
from awm_runtime.testing import FakeOpenAI, sim_responder, teach_builtin
from tests.e2e._inproc import Result, run_cli
from tests.e2e.test_awm_run import awm_run, records


def awm_export(*args: str) -> Result:
    """awm-export, in process (tests/e2e/_inproc.py): these tests are about the files it writes."""
    return run_cli("export", *args, timeout=300)


def events(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def ab_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every built-in task, the novice with and without the oracle expert: one run, two arms, paired seeds."""
    out = tmp_path_factory.mktemp("ab") / "run"
    proc = awm_run("--policy", "sim/novice", "--arm", "solo:expert=none", "--arm", "asked:expert=sim/oracle",
                   "--reward", "try-first", "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    return out


def test_the_expert_clearly_raises_completion(ab_run: Path) -> None:
    arms = json.loads((ab_run / "summary.json").read_text())["arms"]
    solo, asked = arms["solo"], arms["asked"]
    assert solo["episodes"] == asked["episodes"] >= 60
    assert asked["completion_rate"] >= solo["completion_rate"] + 0.2, (solo, asked)
    assert solo["expert_calls"] == solo["nudges"] == 0 and asked["expert_calls"] > 0


def test_records_show_nudge_after_error_then_ask_then_recovery_shaped_by_try_first(ab_run: Path) -> None:
    recs = [r for r in records(ab_run) if r["arm"] == "asked"]
    recovered = [r for r in recs if r["ask_style"] == "recovery" and r["outcome"] == "complete"]
    assert recovered
    after_errors = 0
    for r in recovered:
        assert r["reward"] == 1.3 and r["reward_components"]["key"] == "recovery"
        sources = [m["source"] for m in r["messages"]]
        ask = next(i for i, m in enumerate(r["messages"]) if m["source"] == "policy" and any(
            (c.get("function") or {}).get("name") == "ask_expert" for c in m.get("tool_calls") or []))
        assert sources[ask - 1] == "nudge" and sources[ask + 1] == "expert"  # nudged, asked, advised
        rule = next(n["rule"] for n in r["nudge_log"] if n["followed_by_ask"])
        errors = [i for i in range(ask - 1) if r["messages"][i].get("tool_error") or (
            sources[i] == "system" and r["messages"][i - 1].get("format_error"))]
        assert rule == "on_stall" or (rule == "on_error" and errors and errors[-1] == ask - 2)
        after_errors += rule == "on_error"
    assert after_errors > len(recovered) / 2  # mostly: an error, a nudge, the ask, the advice, then success
    solo_done = [r for r in recs if r["ask_style"] == "solo" and r["outcome"] == "complete"]
    assert all(r["reward"] == 2.0 for r in solo_done)
    assert all(r["reward"] == 0.8 for r in recs if r["ask_style"] == "blind" and r["outcome"] == "complete")


def test_export_pairs_and_sft_from_the_run(ab_run: Path, tmp_path: Path) -> None:
    proc = awm_export(str(ab_run), "--format", "pairs", "--arm", "asked", "--out", str(tmp_path / "pairs.jsonl"))
    assert proc.returncode == 0, proc.stderr
    pairs = [json.loads(line) for line in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    # DPO pairs around each ask: the failed action before the advice is rejected, the followed one chosen.
    assert pairs and all(p["answered_by"] == "llm:sim/oracle" for p in pairs)
    assert all(json.loads(p["rejected_action"])["kind"] in ("call", "malformed") for p in pairs)
    assert all(p["rejected_result"] and p["prompt"] and p["chosen"] and p["rejected"] for p in pairs)
    sft = awm_export(str(ab_run), "--format", "sft")
    assert sft.returncode == 0, sft.stderr
    rows = [json.loads(line) for line in sft.stdout.splitlines()]
    assert rows and all(m["role"] in ("system", "user", "assistant", "tool") for r in rows for m in r["messages"])
    hint = awm_export(str(ab_run), "--format", "grpo")
    assert hint.returncode == 2 and hint.stdout == "" and "--group-size" in hint.stderr  # nothing exported


@pytest.mark.parametrize(("args", "message"), [(["/no/such/run", "--format", "sft"], "is not a run directory"),
                                               (["--format", "sft", "--outcomes", "great"], "--outcomes")])
def test_export_bad_input_is_one_line_and_exit_2(ab_run: Path, args: list[str], message: str) -> None:
    proc = awm_export(*(args if args[0].startswith("/") else [str(ab_run), *args]))
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_policy_and_expert_on_two_endpoints_with_two_keys(tmp_path: Path) -> None:
    teach_builtin()
    with FakeOpenAI(key="policy-key-1111", responder=sim_responder("novice"), max_lifetime_s=300) as pol, \
            FakeOpenAI(key="expert-key-2222", responder=sim_responder("oracle"), max_lifetime_s=300) as exp:
        config = tmp_path / "awm.toml"
        config.write_text(f"""
[models.pol]
model = "openai/fake-model"
api_base = "{pol.url}"
api_key_env = "POL_KEY"
[models.exp]
model = "openai/fake-model"
api_base = "{exp.url}"
api_key_env = "EXP_KEY"
""")
        out = tmp_path / "run"
        proc = awm_run("--config", str(config), "--policy", "pol", "--expert", "exp", "--expert-calls", "1",
                       "--preflight", "quick",
                       "--scenarios", "homehub*,shopfront*", "--out", str(out), "--quiet",
                       env={"POL_KEY": "policy-key-1111", "EXP_KEY": "expert-key-2222"})
        pol_requests, exp_requests = list(pol.requests), list(exp.requests)
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    calls = sum(r["expert_calls"] for r in recs)
    assert calls > 0 and max(r["expert_calls"] for r in recs) == 1
    assert len(exp_requests) == calls  # every expert call, and only those, went to the expert endpoint
    assert all(r["_auth"] == "Bearer expert-key-2222" for r in exp_requests)
    assert all(r["messages"][0]["content"].startswith(EXPERT_MARKER) for r in exp_requests)
    assert all(r["_auth"] == "Bearer policy-key-1111" for r in pol_requests)
    assert not any(EXPERT_MARKER in (m.get("content") or "") for r in pol_requests for m in r["messages"]
                   if m["role"] == "system")
    assert all(r["usage"]["expert"]["prompt_tokens"] > 0 for r in recs if r["expert_calls"])
    assert not [e for e in events(out) if e["event"] == "tool_called" and e["tool"] == "ask_expert"]
    run_files = "".join(p.read_text() for p in out.iterdir() if p.is_file())
    assert "policy-key-1111" not in run_files and "expert-key-2222" not in run_files


def test_human_expert_from_the_terminal_of_awm_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cmd = [sys.executable, "-c", "from awm_runtime.cli import run_main; raise SystemExit(run_main())",
           "--policy", "sim/novice", "--expert", "human:deadline=8+fallback=sim/oracle", "--scenarios", "homehub*",
           "--out", str(out), "--quiet", "--concurrency", "10"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            bufsize=1, env=dict(os.environ))
    seen: list[int] = []

    def person() -> None:
        assert proc.stderr is not None and proc.stdin is not None
        for line in proc.stderr:
            m = re.match(r"^\[request (\d+)\] \S+ task", line)
            if m:
                seen.append(int(m.group(1)))
                if len(seen) != 2:  # the second request is left to its deadline
                    proc.stdin.write(f"{m.group(1)} Look the id up with a list call, then retry.\n")
                    proc.stdin.flush()

    reader = threading.Thread(target=person, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(5)
    assert proc.returncode == 0
    answers = [a for r in records(out) for a in r["expert_answers"]]
    assert len(answers) == len(seen) >= 2
    by_human = [a for a in answers if a["answered_by"] == "human:terminal"]
    fell_back = [a for a in answers if a["fallback"]]
    assert len(by_human) == len(seen) - 1 and len(fell_back) == 1
    assert fell_back[0]["answered_by"] == "llm:sim/oracle" and fell_back[0]["latency_s"] >= 8


def test_groups_from_the_command_line_and_their_export(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = awm_run("--scenarios", "homehub*", "--tasks", "0-2", "--group-size", "4", "--expert-ratio", "adaptive",
                   "--repeats", "2", "--reward", "try-first", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["groups"]["size"] == 4 and summary["groups"]["steps"][0]["phase"] == "assisted"
    assert len(records(out)) == 3 * 4 * 2
    exported = awm_export(str(out), "--format", "grpo")
    assert exported.returncode == 0, exported.stderr
    groups = [json.loads(line) for line in exported.stdout.splitlines()]
    # One prompt row per group (TRL's GRPO shape): its four members' rewards, their mean and spread.
    assert len(groups) == 6 and all(len(g["rewards"]) == g["size"] == 4 for g in groups)
    assert all(abs(g["reward_mean"] - sum(g["rewards"]) / 4) < 1e-9 and g["reward_std"] >= 0 for g in groups)
    assert {g["step"] for g in groups} == {0, 1}


def test_static_advisor_speaks_once_before_turn_one(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = awm_run("--expert", "static:sim/oracle", "--scenarios", "homehub*", "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    for r in records(out):
        assert [m["source"] for m in r["messages"][:3]] == ["system", "system", "expert"]
        assert r["expert_calls"] == 1 and r["nudges"] == 0 and r["expert"]["alias"] == "static:sim/oracle"
        assert r["expert_answers"][0]["answered_by"] == "static:llm:sim/oracle"
