"""awm-run with each role on another provider's wire: OpenAI, Anthropic's Messages API and Gemini's
generateContent, each on its own loopback port with its own key, all through litellm as a user configures it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.models._pricing import _entry
from awm_runtime.models.sim import EXPERT_MARKER
from awm_runtime.testing import FakeAnthropic, FakeGemini, FakeOpenAI, Reply, sim_responder, storm, teach_builtin
from tests.e2e.test_awm_run import awm_run, records

KEYS = {"POL_KEY": "policy-key-openai-1111", "EXP_KEY": "expert-key-anthropic-2222", "JUDGE_KEY": "judge-key-gem-3333"}
CLAUDE = "claude-sonnet-4-5-20250929"
GEMINI = "gemini-2.5-flash"
PROBE = [{"role": "user", "content": "Reply with OK."}]  # the preflight's test completion
FAST = "backoff_s = 0.01\nretries = { server = 12, rate_limit = 12 }\nmax_concurrency = 8\n"


def events(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]


def probe_aware(inner: Any) -> Any:
    """Answer the preflight's one-line test completion plainly; everything else with `inner`."""
    return lambda request: Reply(content="OK") if request["messages"] == PROBE else inner(request)


def judge(request: dict[str, Any]) -> Reply:
    return Reply(content='{"classification": "complete", "reason": "the evidence shows the change"}')


def test_policy_openai_expert_anthropic_judge_gemini_each_on_its_own_port_and_key(tmp_path: Path) -> None:
    teach_builtin()
    # A 529 storm on the expert: 40% of its calls are overloaded, and every episode must still be recorded.
    expert = storm(sim_responder("oracle"), rate_limited=0.0, server_errors=0.4, statuses=(529,), seed=7)
    with FakeOpenAI(key=KEYS["POL_KEY"], responder=sim_responder("novice"), max_lifetime_s=300) as pol, \
            FakeAnthropic(key=KEYS["EXP_KEY"], models=(CLAUDE,), responder=probe_aware(expert),
                          max_lifetime_s=300) as exp, \
            FakeGemini(key=KEYS["JUDGE_KEY"], models=(GEMINI,), responder=probe_aware(judge),
                       max_lifetime_s=300) as jdg:
        config = tmp_path / "awm.toml"
        config.write_text(f"""
[models.pol]
model = "openai/fake-model"
api_base = "{pol.url}"
api_key_env = "POL_KEY"
{FAST}
[models.claude]
model = "anthropic/{CLAUDE}"
api_base = "{exp.url}"
api_key_env = "EXP_KEY"
params = {{ max_tokens = 1024 }}
{FAST}
[models.gem]
model = "gemini/{GEMINI}"
api_base = "{jdg.url}"
api_key_env = "JUDGE_KEY"
{FAST}
""")
        out = tmp_path / "run"
        proc = awm_run("--config", str(config), "--policy", "pol", "--expert", "claude", "--judge", "gem",
                       "--verifier", "sql", "--expert-calls", "1", "--scenarios", "homehub*,shopfront*",
                       "--tasks", "0-3", "--out", str(out), "--quiet", env=KEYS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = records(out)
    assert len(recs) == 8 and all(r["error"] is None and r["outcome"] != "error" for r in recs)
    # Each role reached only its own port, with only its own key, in its own wire's auth header.
    assert pol.requests and all(r["_auth"] == f"Bearer {KEYS['POL_KEY']}" for r in pol.requests)
    assert exp.requests and all(r["_auth"] == KEYS["EXP_KEY"] and r["_version"] for r in exp.requests)
    assert jdg.requests and all(r["_auth"] == KEYS["JUDGE_KEY"] and r["_model"] == GEMINI for r in jdg.requests)
    episode_expert = [r for r in exp.requests if r["_chat"]["messages"] != PROBE]
    episode_judge = [r for r in jdg.requests if r["_chat"]["messages"] != PROBE]
    # Each server saw only its own role's prompts: the agent's, the expert's, the judge's.
    assert not any(EXPERT_MARKER in json.dumps(r["messages"]) or "EPISODE-DATA" in json.dumps(r["messages"])
                   for r in pol.requests)
    assert all(r["_chat"]["messages"][0]["content"].startswith(EXPERT_MARKER) for r in episode_expert)
    assert all("EPISODE-DATA" in r["_chat"]["messages"][-1]["content"] for r in episode_judge)
    assert len(episode_judge) == len(recs)  # one classification per episode, all on the Gemini port
    # The storm: overloaded answers were retried (server class) and no expert call failed for good.
    asks = sum(r["expert_calls"] for r in recs)
    assert asks > 0 and len(episode_expert) > asks
    retries = [e for e in events(out) if e.get("event") == "model_retry" and e.get("role") == "expert"]
    assert retries and {e["kind"] for e in retries} == {"server"}
    assert not [e for e in events(out) if e.get("event") == "model_failed"]
    # Usage and cost per role: Anthropic's and Gemini's token counts, priced from litellm's map.
    claude_prices, gemini_prices = _entry(f"anthropic/{CLAUDE}"), _entry(f"gemini/{GEMINI}")
    assert claude_prices and gemini_prices
    for r in (r for r in recs if r["expert_calls"]):
        used = r["usage"]["expert"]
        assert used["prompt_tokens"] > 0 and used["completion_tokens"] > 0
        assert used["cost_usd"] == pytest.approx(used["prompt_tokens"] * claude_prices["input_cost_per_token"]
                                                 + used["completion_tokens"] * claude_prices["output_cost_per_token"])
    for r in recs:
        judged = r["verdict_detail"]["returned"]["judge_usage"]
        assert judged["prompt_tokens"] > 0 and judged["cost_usd"] == pytest.approx(
            judged["prompt_tokens"] * gemini_prices["input_cost_per_token"]
            + judged["completion_tokens"] * gemini_prices["output_cost_per_token"])
    run_files = "".join(p.read_text() for p in out.iterdir() if p.is_file())
    assert not any(key in run_files or key in proc.stderr for key in KEYS.values())


WIRES = {
    "anthropic": (FakeAnthropic, CLAUDE, FakeAnthropic.prompt_too_long, FakeAnthropic.rate_limited,
                  FakeAnthropic.overloaded, "prompt is too long"),
    "gemini": (FakeGemini, GEMINI, FakeGemini.token_limit, FakeGemini.resource_exhausted, FakeGemini.unavailable,
               "exceeds the maximum number of tokens allowed"),
}


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_a_native_tools_policy_on_the_wire_round_trips_tools_retries_and_records_overflow(
        tmp_path: Path, wire: str) -> None:
    server_cls, model, overflow, throttled, busy, overflow_text = WIRES[wire]
    teach_builtin()
    oracle = sim_responder("oracle")
    seen: dict[str, int] = {}

    def policy(request: dict[str, Any]) -> Reply:
        """The oracle, except: the first episode's prompt no longer fits after its first tool result, and each
        episode's first two calls are throttled, then overloaded."""
        if request["messages"] == PROBE:
            return Reply(content="OK")
        task = next(m["content"] for m in request["messages"] if m["role"] == "user")
        n = seen[task] = seen.get(task, 0) + 1
        if n == 1:
            return throttled()
        if n == 2:
            return busy()
        if task == next(iter(seen)) and request["messages"][-1]["role"] == "tool":
            return overflow()
        return oracle(request)

    with server_cls(key="policy-wire-key-4444", models=(model,), responder=policy, max_lifetime_s=300) as server:
        config = tmp_path / "awm.toml"
        config.write_text(f"""
[models.agent]
model = "{wire}/{model}"
api_base = "{server.url}"
api_key_env = "AGENT_KEY"
protocol = "native"
params = {{ max_tokens = 512 }}
{FAST}
""")
        out = tmp_path / "run"
        # --model-procs 0: litellm in the run's own process (the three-wire run above uses the call procs).
        proc = awm_run("--config", str(config), "--policy", "agent", "--expert", "none", "--scenarios", "homehub*",
                       "--tasks", "0-3", "--model-procs", "0", "--out", str(out), "--quiet",
                       env={"AGENT_KEY": "policy-wire-key-4444"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = records(out)
    assert len(recs) == 4 and all(r["error"] is None for r in recs)
    overflowed = [r for r in recs if r["end_reason"] == "context_overflow"]
    assert len(overflowed) == 1
    for r in overflowed:  # the agent's own outcome, with the provider's words
        assert r["outcome"] == "incomplete" and overflow_text in r["end_detail"] and r["tool_calls"] >= 1
    done = [r for r in recs if r not in overflowed]
    assert done and all(r["outcome"] == "complete" and r["tool_calls"] > 0 for r in done)  # tool calls round-trip
    retried = {e["kind"] for e in events(out) if e.get("event") == "model_retry"}
    assert retried == {"rate_limit", "server"}
    assert all(r["usage"]["policy"]["prompt_tokens"] > 0 and r["usage"]["policy"]["cost_usd"] > 0 for r in recs)
