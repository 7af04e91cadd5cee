"""Reasoning models on each wire, through awm-run as a user configures them (issue 46): Claude with extended thinking
(its signed thinking blocks must come back before each tool_use), a Gemini thinking model (each function call's
thought signature must come back) and a vLLM reasoning parser (`reasoning_content`, reasoning tokens). The loopback
servers refuse what the real APIs refuse, so a lost block or signature fails the episode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.testing import FakeAnthropic, FakeGemini, FakeOpenAI, Reply, sim_responder, teach_builtin
from tests.e2e._inproc import run_cli
from tests.e2e.test_awm_run import awm_run, records

CLAUDE = "claude-sonnet-4-5-20250929"
GEMINI = "gemini-3-pro-preview"
PROBE = [{"role": "user", "content": "Reply with OK."}]
FAST = "backoff_s = 0.01\nretries = { server = 4, rate_limit = 4 }\nmax_concurrency = 8\n"
KEY = "reasoning-wire-key-5555"
CLAUDE_THINKING = 'params = { max_tokens = 4096, thinking = { type = "enabled", budget_tokens = 2048 } }\n'


def thinking(inner: Any, text: str = "The last result says what to do next; call the tool it points to.") -> Any:
    """`inner`'s answers, each with a reasoning text (the servers render it in their own wire)."""
    def respond(request: dict[str, Any]) -> Reply:
        if request["messages"] == PROBE:
            return Reply(content="OK", extra_message={"reasoning_content": "A plain OK will do."})
        reply = inner(request)
        reply.extra_message = {**reply.extra_message, "reasoning_content": text}
        return reply
    return respond


def run(tmp_path: Path, alias_toml: str, *extra: str) -> tuple[Any, Path]:
    config = tmp_path / "awm.toml"
    config.write_text(f"[models.agent]\n{alias_toml}\nprotocol = \"native\"\napi_key_env = \"AGENT_KEY\"\n{FAST}")
    out = tmp_path / "run"
    proc = awm_run("--config", str(config), "--policy", "agent", "--expert", "none", "--scenarios", "homehub*",
                   "--tasks", "0-2", "--out", str(out), "--quiet", *extra, env={"AGENT_KEY": KEY})
    return proc, out


def policy_replies(rec: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in rec["messages"] if m["source"] == "policy"]


@pytest.mark.parametrize("procs", [("--model-procs", "0"), ("--model-procs", "1"), ("--shards", "2")])
def test_claude_with_thinking_runs_multi_turn_tool_episodes_handing_back_its_signed_blocks(
        tmp_path: Path, procs: tuple[str, str]) -> None:
    teach_builtin()
    with FakeAnthropic(key=KEY, models=(CLAUDE,), responder=thinking(sim_responder("oracle")),
                       max_lifetime_s=300) as server:
        proc, out = run(tmp_path, f'model = "anthropic/{CLAUDE}"\napi_base = "{server.url}"\n{CLAUDE_THINKING}',
                        *procs)
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = records(out)
    assert len(recs) == 3 and all(r["error"] is None and r["outcome"] == "complete" for r in recs), \
        [(r["outcome"], r["end_reason"], r["error"]) for r in recs]
    assert server.refused == []
    assert all(r["tool_calls"] >= 1 for r in recs)
    # Every later request's final assistant turn starts with the exact block the server signed for it.
    issued = {}
    for r in recs:
        for m in policy_replies(r):
            blocks = m["provider_state"]["fields"]["thinking_blocks"]
            assert m["provider_state"]["model"] == f"anthropic/{CLAUDE}" and blocks[0]["signature"]
            assert m["reasoning"] == blocks[0]["thinking"]
            issued[blocks[0]["signature"]] = blocks[0]
    handed_back = [m["content"][0] for body in server.requests for m in body["messages"] if m["role"] == "assistant"]
    assert handed_back and all(b["type"] == "thinking" and issued[b["signature"]] == b for b in handed_back)
    # Anthropic's usage does not say how many output tokens were thinking: not reported, never 0.
    assert all(r["usage"]["policy"]["reasoning_tokens"] is None and r["usage"]["policy"]["completion_tokens"] > 0
               for r in recs)
    economics = json.loads((out / "summary.json").read_text())["arms"]["main"]["economics"]
    assert economics["reasoning_tokens_per_episode"] is None
    assert economics["reasoning_note"] == "not reported by policy agent"


def test_a_gemini_thinking_model_gets_every_thought_signature_back_and_its_thought_tokens_counted(
        tmp_path: Path) -> None:
    teach_builtin()
    with FakeGemini(key=KEY, models=(GEMINI,), thinking=True, responder=thinking(sim_responder("oracle")),
                    max_lifetime_s=300) as server:
        proc, out = run(tmp_path, f'model = "gemini/{GEMINI}"\napi_base = "{server.url}"\n'
                                  'params = { max_tokens = 2048 }', "--model-procs", "0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = records(out)
    assert len(recs) == 3 and all(r["error"] is None and r["outcome"] == "complete" for r in recs), \
        [(r["outcome"], r["end_reason"], r["error"]) for r in recs]
    assert server.refused == [] and server.signatures.dummies == 0  # no call lost its signature, none replaced
    sent = [p["thoughtSignature"] for body in server.requests for c in body["contents"] if c["role"] == "model"
            for p in c["parts"] if "functionCall" in p or "function_call" in p]
    assert sent and set(sent) <= server.signatures.issued
    for r in recs:  # thoughtsTokenCount, inside completion_tokens and counted once
        used = r["usage"]["policy"]
        assert used["reasoning_tokens"] == used["calls"] * max(1, len(
            "The last result says what to do next; call the tool it points to.") // 4)
        assert used["completion_tokens"] > used["reasoning_tokens"]


def test_a_vllm_reasoning_parser_has_its_reasoning_kept_handed_back_counted_and_tabled(tmp_path: Path) -> None:
    teach_builtin()
    with FakeOpenAI(key=KEY, models=("qwen3",), responder=thinking(sim_responder("oracle")),
                    max_lifetime_s=300) as server:
        proc, out = run(tmp_path, f'model = "hosted_vllm/qwen3"\napi_base = "{server.url}"')
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = records(out)
    assert len(recs) == 3 and all(r["error"] is None and r["outcome"] == "complete" for r in recs)
    text = "The last result says what to do next; call the tool it points to."
    for r in recs:
        assert all(m["reasoning"] == text for m in policy_replies(r))
        assert r["usage"]["policy"]["reasoning_tokens"] == r["usage"]["policy"]["calls"] * (len(text) // 4)
    later = [m for body in server.requests for m in body["messages"] if m["role"] == "assistant"]
    assert later and all(m["reasoning_content"] == text for m in later)
    assert not any("provider_state" in m or "source" in m for m in later)  # only what the wire knows
    # The economics: reasoning tokens per episode beside the output tokens they are part of.
    economics = json.loads((out / "summary.json").read_text())["arms"]["main"]["economics"]
    calls = sum(r["usage"]["policy"]["calls"] for r in recs)
    assert economics["reasoning_tokens_per_episode"] == round(calls * (len(text) // 4) / 3, 1)
    assert economics["output_tokens_per_episode"] > economics["reasoning_tokens_per_episode"]
    from tests.e2e.conftest import awm_command

    report = awm_command("report", str(out))
    assert report.returncode == 0, report.stderr[-2000:]
    line = next(line for line in report.stdout.splitlines() if "of which reasoning" in line)
    assert f"{economics['reasoning_tokens_per_episode']:,.0f}" in line


def test_claude_with_thinking_survives_a_kill_9_and_resume_mid_episode_and_a_fork(tmp_path: Path) -> None:
    """The signed blocks are part of the checkpointed transcript: the resumed and the forked episodes hand them back."""
    import os
    import signal
    import subprocess
    import sys

    from tests.e2e.test_resume_mid_episode import checkpoints
    from tests.e2e.test_resume_shutdown import wait_for

    teach_builtin()
    oracle = thinking(sim_responder("oracle"))

    def slow(request: dict[str, Any]) -> Reply:
        reply = oracle(request)
        reply.delay_s = 0.0 if request["messages"] == PROBE else 0.15
        return reply

    env = {**os.environ, "AGENT_KEY": KEY}
    cmd = [sys.executable, "-c", "from awm_runtime.cli import run_main; raise SystemExit(run_main())"]
    with FakeAnthropic(key=KEY, models=(CLAUDE,), responder=slow, max_lifetime_s=300) as server:
        config = tmp_path / "awm.toml"
        config.write_text(f'[models.agent]\nmodel = "anthropic/{CLAUDE}"\napi_base = "{server.url}"\n{CLAUDE_THINKING}'
                          f'protocol = "native"\napi_key_env = "AGENT_KEY"\n{FAST}')
        out, fork = tmp_path / "run", tmp_path / "fork"
        proc = subprocess.Popen([*cmd, "--config", str(config), "--policy", "agent", "--expert", "none",
                                 "--scenarios", "homehub*", "--tasks", "0-3", "--out", str(out), "--quiet",
                                 "--checkpoint", "every", "--concurrency", "4", "--model-procs", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            wait_for(lambda: checkpoints(out) >= 4 or proc.poll() is not None)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
        finally:
            proc.kill()
            proc.communicate()
        resumed = awm_run("--out", str(out), "--resume", "--quiet", env={"AGENT_KEY": KEY})
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        forked = run_cli("fork", str(out), "--at", "1", "--arm", "again:mode=continue", "--out", str(fork), "--quiet",
                         env={"AGENT_KEY": KEY}, timeout=600)  # in process (tests/e2e/_inproc.py)
        assert forked.returncode == 0, forked.stderr[-3000:]
    recs, fork_recs = records(out), records(fork)
    assert len(recs) == 4 and all(r["error"] is None and r["outcome"] == "complete" for r in recs)
    assert any(r["resumed_from"] for r in recs), "the kill found no episode in flight"
    assert fork_recs and all(r["error"] is None and r["outcome"] == "complete" for r in fork_recs)
    assert server.refused == []  # no request lost a block, across the kill, the resume and the fork
    for r in (*recs, *fork_recs):
        assert all(m["provider_state"]["fields"]["thinking_blocks"] for m in policy_replies(r))


def test_an_effort_a_b_on_one_claude_alias_is_paired_with_cost_and_latency_per_success(tmp_path: Path) -> None:
    """`--arm low:reasoning_effort=low --arm high:reasoning_effort=high`: litellm turns each effort into Anthropic's
    thinking budget; on this server a bigger budget thinks longer (costs more) and solves what the small one does
    not. A third arm sets the budget itself."""
    teach_builtin()
    oracle = sim_responder("oracle")
    budgets: list[int] = []

    def by_budget(request: dict[str, Any]) -> Reply:
        """A big budget solves every task; a small one gives up at once on the tasks of odd-length text."""
        budget = int((request.get("thinking") or {}).get("budget_tokens") or 0)
        budgets.append(budget)
        if request["messages"] == PROBE:
            return Reply(content="OK")
        task = next(m["content"] for m in request["messages"] if m["role"] == "user")
        reply = oracle(request) if budget >= 4096 or len(task) % 2 == 0 else Reply(content="Nothing to do here.")
        reply.extra_message = {"reasoning_content": "Think it through. " * (budget // 64)}
        return reply

    with FakeAnthropic(key=KEY, models=(CLAUDE,), responder=by_budget, max_lifetime_s=300) as server:
        proc, out = run(tmp_path, f'model = "anthropic/{CLAUDE}"\napi_base = "{server.url}"\n'
                                  'params = { max_tokens = 8192 }', "--tasks", "0-4", "--arm",
                        "low:reasoning_effort=low", "--arm", "high:reasoning_effort=high", "--arm",
                        "budget:thinking_budget=4096", "--model-procs", "0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert server.refused == [] and {1024, 4096} <= set(budgets)
    recs = records(out)
    assert all(r["error"] is None for r in recs) and len(recs) == 15
    summary = json.loads((out / "summary.json").read_text())
    arms = summary["arms"]
    low, high, budget = (arms[a]["economics"] for a in ("low", "high", "budget"))
    assert high["output_tokens_per_episode"] > low["output_tokens_per_episode"]
    assert high["cost_known"] and high["usd_per_completed_task"] is not None
    assert high["model_calls"]["policy"]["latency"]["p50_s"] is not None
    assert budget["output_tokens_per_episode"] == pytest.approx(high["output_tokens_per_episode"], rel=0.3)
    complete = {a: sum(r["outcome"] == "complete" for r in recs if r["arm"] == a) for a in ("low", "high")}
    assert complete["high"] == 5 and complete["high"] >= complete["low"]
    pair = next(c for c in summary["paired"] if (c["a"], c["b"]) == ("low", "high"))
    assert pair["design"] == "paired" and pair["pairs"] == 5 and pair["completion_diff"] > 0


def test_a_fork_into_claude_thinking_from_another_model_s_transcript_is_said_and_counted(tmp_path: Path) -> None:
    """The forked prefix's tool calls were another model's: no signed block can go back. Anthropic refuses such a
    request (a model error, not the agent's); with LITELLM_MODIFY_PARAMS litellm drops thinking for it instead, which
    the run says once and counts, never silently."""
    import os
    import subprocess
    import sys

    teach_builtin()
    env = {**os.environ, "AGENT_KEY": KEY}
    fork_cmd = [sys.executable, "-c", "from awm_runtime.cli import fork_main; raise SystemExit(fork_main())"]
    with FakeOpenAI(key=KEY, responder=sim_responder("oracle"), max_lifetime_s=300) as gpt, \
            FakeAnthropic(key=KEY, models=(CLAUDE,), responder=thinking(sim_responder("oracle")),
                          max_lifetime_s=300) as claude:
        config = tmp_path / "awm.toml"
        config.write_text(f'[models.agent]\nmodel = "openai/fake-model"\napi_base = "{gpt.url}"\n'
                          f'protocol = "native"\napi_key_env = "AGENT_KEY"\n{FAST}\n'
                          f'[models.claude]\nmodel = "anthropic/{CLAUDE}"\napi_base = "{claude.url}"\n{CLAUDE_THINKING}'
                          f'protocol = "native"\napi_key_env = "AGENT_KEY"\n{FAST}')
        out = tmp_path / "run"
        proc = awm_run("--config", str(config), "--policy", "agent", "--expert", "none", "--scenarios", "homehub*",
                       "--tasks", "0-1", "--out", str(out), "--quiet", "--checkpoint", "every", env={"AGENT_KEY": KEY})
        assert proc.returncode == 0, proc.stderr[-3000:]
        # litellm reads LITELLM_MODIFY_PARAMS once, at import: the "dropped" fork needs a process of its own; the
        # "refused" one (no such variable, as in this process) runs in process.
        fork = ("--at", "1", "--arm", "claude:policy=claude", "--out")
        runs: dict[str, Any] = {"refused": run_cli("fork", str(out), *fork, str(tmp_path / "refused"),
                                                   env={"AGENT_KEY": KEY}, timeout=600)}
        runs["dropped"] = subprocess.run([*fork_cmd, str(out), *fork, str(tmp_path / "dropped")], capture_output=True,
                                         text=True, env={**env, "LITELLM_MODIFY_PARAMS": "True"}, timeout=600)
    for proc in runs.values():
        assert proc.returncode == 0, proc.stderr[-3000:]
    refused, dropped = records(tmp_path / "refused"), records(tmp_path / "dropped")
    assert refused and all(r["outcome"] == "error" and r["end_reason"] == "model_error"
                           and "found `tool_use`" in r["error"]["message"] for r in refused)
    assert dropped and all(r["error"] is None for r in dropped)
    summary = json.loads((tmp_path / "dropped" / "summary.json").read_text())
    assert summary["arms"]["claude"]["reasoning_dropped_episodes"] == len(dropped)
    said = [json.loads(line) for line in (tmp_path / "dropped" / "events.jsonl").read_text().splitlines()]
    missing = [e for e in said if e.get("event") == "reasoning_state_missing"]
    assert len(missing) == 1 and missing[0]["alias"] == "claude"  # once per run (one process), with the alias
    assert "litellm_modify_params" in runs["dropped"].stderr and "alias=claude" in runs["dropped"].stderr
    assert "litellm_modify_params" not in runs["refused"].stderr


def test_a_reasoning_judge_or_expert_out_of_max_tokens_is_a_configuration_error_of_its_alias(tmp_path: Path) -> None:
    """All of max_tokens spent on reasoning, no answer: the episode is an infrastructure error naming the alias and
    the fix, never the agent's failure and never judge_unclassified; the preflight already said so."""
    teach_builtin()
    out_of_tokens = Reply(content="", extra_message={"reasoning_content": "Let me weigh every criterion. " * 20},
                          extra_choice={"finish_reason": "length"})
    with FakeOpenAI(key=KEY, models=("thinker",), default=out_of_tokens, max_lifetime_s=300) as server:
        config = tmp_path / "awm.toml"
        config.write_text(f'[models.thinker]\nmodel = "hosted_vllm/thinker"\napi_base = "{server.url}"\n'
                          'api_key_env = "AGENT_KEY"\nparams = { max_tokens = 64, reasoning_effort = "high" }\n'
                          f'{FAST}')
        out = tmp_path / "run"
        proc = awm_run("--config", str(config), "--policy", "sim/novice", "--expert", "thinker", "--judge", "thinker",
                       "--verifier", "sql", "--expert-calls", "1", "--scenarios", "homehub*,shopfront*", "--tasks",
                       "0-3", "--out", str(out), env={"AGENT_KEY": KEY})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "reasoning_max_tokens" in proc.stderr and "raise max_tokens under [models.thinker]" in proc.stderr
    recs = records(out)
    assert recs and all(r["outcome"] == "error" for r in recs)
    assert {r["end_reason"] for r in recs} <= {"judge_error", "model_error"} and "judge_unclassified" not in {
        r["verdict"] for r in recs}
    for r in recs:
        said = r["error"]["message"] if r["error"] else r["end_detail"] or json.dumps(r["verdict_detail"])
        assert "raise max_tokens under [models.thinker]" in json.dumps(r), said
    assert any(r["end_reason"] == "model_error" and "expert model 'thinker'" in r["error"]["message"] for r in recs)


def test_an_export_of_a_thinking_run_keeps_what_was_sampled_and_can_drop_it(tmp_path: Path) -> None:
    import datasets

    from tests.e2e.conftest import awm_command

    teach_builtin()
    text = "The last result says what to do next; call the tool it points to."
    with FakeOpenAI(key=KEY, models=("qwen3",), responder=thinking(sim_responder("oracle"), text),
                    max_lifetime_s=300) as server:
        proc, out = run(tmp_path, f'model = "hosted_vllm/qwen3"\napi_base = "{server.url}"')
    assert proc.returncode == 0, proc.stderr[-3000:]
    kept, dropped = tmp_path / "sft.jsonl", tmp_path / "plain.jsonl"
    for path, extra in ((kept, ()), (dropped, ("--drop-reasoning",))):
        done = awm_command("export", str(out), "--format", "sft", "--out", str(path), *extra)
        assert done.returncode == 0, done.stderr[-2000:]
    rows = datasets.load_dataset("json", data_files=str(kept), split="train")
    assert len(rows) == 3
    for row in rows:  # every assistant turn (the policy's own, trained on) carries the reasoning it sampled
        replies = [m for m in row["messages"] if m["role"] == "assistant"]
        assert replies and all(m["reasoning_content"] == text for m in replies)
    plain = datasets.load_dataset("json", data_files=str(dropped), split="train")
    assert len(plain) == 3 and "reasoning_content" not in plain[0]["messages"][2]


def test_an_effort_a_b_stops_when_decided(tmp_path: Path) -> None:
    teach_builtin()
    oracle = sim_responder("oracle")

    def by_effort(request: dict[str, Any]) -> Reply:
        """`high` (a 4,096 budget) solves every task, `low` none."""
        if request["messages"] == PROBE:
            return Reply(content="OK")
        budget = int((request.get("thinking") or {}).get("budget_tokens") or 0)
        return oracle(request) if budget >= 4096 else Reply(content="Nothing to do here.")

    with FakeAnthropic(key=KEY, models=(CLAUDE,), responder=by_effort, max_lifetime_s=300) as server:
        proc, out = run(tmp_path, f'model = "anthropic/{CLAUDE}"\napi_base = "{server.url}"\n'
                                  'params = { max_tokens = 8192 }', "--tasks", "all", "--arm",
                        "low:reasoning_effort=low", "--arm", "high:reasoning_effort=high", "--until-decided",
                        "--max-episodes", "40", "--model-procs", "0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sequential"]["decided"] and summary["sequential"]["later_arm_wins"] >= 1
    assert summary["arms"]["high"]["economics"]["usd_per_completed_task"] is not None
