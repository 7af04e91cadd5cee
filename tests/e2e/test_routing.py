"""awm-run with real routing: two loopback servers, two keys, faults, and a grep for the keys."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.models.sim import EXPERT_MARKER
from awm_runtime.testing import FakeOpenAI, Reply, sim_responder, storm, teach_builtin
from tests.e2e.test_awm_run import awm_run, records

POLICY_KEY = "pol-key-5f3a9c1e77d2"
EXPERT_KEY = "exp-key-8b6e0d4f12aa"
KEYS = {"POLICY_KEY": POLICY_KEY, "EXPERT_KEY": EXPERT_KEY}


@pytest.fixture(scope="module", autouse=True)
def _taught() -> None:
    teach_builtin()


def alias(name: str, model: str, url: str, key_env: str, **extra: Any) -> str:
    lines = [f"[models.{name}]", f'model = "{model}"', f'api_base = "{url}"', f'api_key_env = "{key_env}"',
             "backoff_s = 0.02"]
    lines += [f"{k} = {json.dumps(v) if not isinstance(v, dict) else _inline(v)}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


def _inline(table: dict[str, Any]) -> str:
    return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in table.items()) + " }"


def assert_no_keys(out: Path, *streams: str) -> None:
    """No key in any file of the run directory, nor in what the run printed."""
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for key in KEYS.values():
                assert key.encode() not in data, f"{key} leaked into {path.name}"
    for text in streams:
        for key in KEYS.values():
            assert key not in text


def is_expert_request(request: dict[str, Any]) -> bool:
    return any(EXPERT_MARKER in str(m.get("content") or "") for m in request.get("messages", []))


@contextmanager
def two_servers(policy: str) -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    """A policy server (`{policy}-7b`, POLICY_KEY) and an oracle server (`oracle-70b`, EXPERT_KEY)."""
    with FakeOpenAI(key=POLICY_KEY, models=(f"{policy}-7b",), responder=sim_responder(policy),
                    max_lifetime_s=240) as first, \
         FakeOpenAI(key=EXPERT_KEY, models=("oracle-70b",), responder=sim_responder("oracle"),
                    max_lifetime_s=240) as second:
        yield first, second


def test_policy_and_expert_calls_go_to_their_own_endpoints_with_their_own_keys(tmp_path: Path) -> None:
    with two_servers("novice") as (pol, exp):
        config = tmp_path / "awm.toml"
        config.write_text(alias("pol", "openai/novice-7b", pol.url, "POLICY_KEY", max_concurrency=8,
                                input_cost_per_mtok=1.0, output_cost_per_mtok=2.0)
                          + alias("exp", "openai/oracle-70b", exp.url, "EXPERT_KEY", max_concurrency=4))
        out = tmp_path / "run"
        proc = awm_run("--config", str(config), "--policy", "pol", "--expert", "exp", "--scenarios", "homehub*",
                       "--out", str(out), "--quiet", env=KEYS)
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) == 10 and not [r for r in recs if r["outcome"] == "error"]
    assert sum(r["expert_calls"] for r in recs) > 0
    # minus the preflight's test completion (max_tokens 8) and, for the native policy, its two tools probes (1)
    policy_calls = [r for r in pol.requests if r.get("max_tokens") not in (1, 8)]
    expert_calls = [r for r in exp.requests if r.get("max_tokens") not in (1, 8)]
    assert policy_calls and expert_calls
    assert all(r["_auth"] == f"Bearer {POLICY_KEY}" and not is_expert_request(r) for r in pol.requests)
    assert all(r["_auth"] == f"Bearer {EXPERT_KEY}" for r in exp.requests)
    assert all(is_expert_request(r) for r in expert_calls)
    assert len(expert_calls) == sum(r["expert_calls"] for r in recs)
    assert sum(r["usage"]["policy"]["calls"] for r in recs) == len(policy_calls)
    assert all(r["usage"]["policy"]["cost_usd"] > 0 for r in recs)
    assert all(r["policy"]["model"] == "openai/novice-7b" and r["expert"]["model"] == "openai/oracle-70b"
               for r in recs)
    assert_no_keys(out, proc.stdout, proc.stderr)


def test_role_flags_route_without_a_config_file(tmp_path: Path) -> None:
    with two_servers("oracle") as (pol, judge):
        out = tmp_path / "run"
        proc = awm_run("--policy", "sim/oracle", "--policy-model", "openai/oracle-7b", "--policy-base", pol.url,
                       "--policy-key-env", "POLICY_KEY", "--expert", "none",
                       "--judge", "gpt-4.1-mini", "--judge-base", judge.url, "--judge-key-env", "EXPERT_KEY",
                       "--judge-model", "openai/oracle-70b",
                       "--scenarios", "shopfront*", "--tasks", "0-2", "--out", str(out), "--quiet", env=KEYS)
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) == 3 and all(r["outcome"] == "complete" for r in recs)
    assert all(r["policy"] == {**r["policy"], "alias": "sim/oracle", "model": "openai/oracle-7b",
                               "simulated": False} for r in recs)
    assert len(judge.requests) == 1 and judge.requests[0]["max_tokens"] == 8  # the judge was preflighted
    assert len(pol.requests) > 3
    assert_no_keys(out, proc.stdout, proc.stderr)


def test_no_episode_is_lost_in_a_storm_of_429s_and_500s(tmp_path: Path) -> None:
    responder = storm(sim_responder("oracle"), rate_limited=0.3, server_errors=0.15, retry_after="0.05", seed=7)
    with FakeOpenAI(key=POLICY_KEY, models=("oracle-7b",), responder=responder, max_lifetime_s=400) as server:
        config = tmp_path / "awm.toml"
        config.write_text(alias("loop", "openai/oracle-7b", server.url, "POLICY_KEY", max_concurrency=32,
                                retries={"rate_limit": 12, "server": 8}, transport="litellm"))
        out = tmp_path / "run"
        proc = awm_run("--config", str(config), "--policy", "loop", "--expert", "none", "--concurrency", "32",
                       "--preflight", "quick", "--out", str(out), "--quiet", env=KEYS, timeout=400)
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) >= 60 and len({(r["scenario"], r["task_idx"]) for r in recs}) == len(recs)
    assert [r["outcome"] for r in recs] == ["complete"] * len(recs)
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    retries = [e for e in events if e["event"] == "model_retry"]
    assert len(retries) > 50 and {e["kind"] for e in retries} == {"rate_limit", "server"}
    assert all(e.get("episode_id") for e in retries)  # retries are logged in their episode's context
    assert len(server.requests) >= sum(r["turns"] for r in recs) + len(retries)
    assert_no_keys(out, proc.stdout, proc.stderr)


def test_exhausted_retries_are_errors_never_incomplete(tmp_path: Path) -> None:
    """Through litellm in a model-call process, so that path is exercised end to end too."""
    with FakeOpenAI(key=POLICY_KEY, models=("m",), default=Reply.error(503, "overloaded"),
                    max_lifetime_s=120) as server:
        config = tmp_path / "awm.toml"
        config.write_text(alias("down", "openai/m", server.url, "POLICY_KEY", retries={"server": 2},
                                transport="litellm"))
        out = tmp_path / "run"
        proc = awm_run("--config", str(config), "--policy", "down", "--expert", "none", "--scenarios", "homehub*",
                       "--tasks", "0-3", "--model-procs", "1", "--out", str(out), "--quiet", env=KEYS)
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) == 4
    for r in recs:
        assert r["outcome"] == "error" and r["error"]["class"] == "ModelError.server"
        assert "after 3 attempts" in r["error"]["message"]
    summary = json.loads((out / "summary.json").read_text())["arms"]["main"]
    assert summary["outcomes"] == {"error": 4} and summary["accountable_episodes"] == 0
    assert summary["error_classes"] == {"ModelError.server": 4}
    # the preflight's test completion, its two native-tools probes (each retried through 5xx under the
    # alias's policy: 3 attempts each), then 3 attempts per episode
    assert len(server.requests) == 1 + 2 * 3 + 4 * 3


def test_a_key_echoed_back_by_the_server_is_redacted_everywhere(tmp_path: Path) -> None:
    with FakeOpenAI(key="the-server-wants-this", models=("m",), leak_key=True, max_lifetime_s=120) as server:
        config = tmp_path / "awm.toml"
        config.write_text(alias("leaky", "openai/m", server.url, "EXPERT_KEY"))
        refused = awm_run("--config", str(config), "--policy", "leaky", "--expert", "none", "--tasks", "0",
                          "--scenarios", "homehub*", "--out", str(tmp_path / "refused"), env=KEYS)
        out = tmp_path / "run"
        proc = awm_run("--config", str(config), "--policy", "leaky", "--expert", "none", "--tasks", "0-1",
                       "--scenarios", "homehub*", "--preflight", "off", "--out", str(out), "--quiet", env=KEYS)
    assert refused.returncode == 2 and "rejected the key in EXPERT_KEY" in refused.stderr
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert [r["error"]["class"] for r in recs] == ["ModelError.auth"] * 2
    assert all("Incorrect API key provided: [REDACTED]" in r["error"]["message"] for r in recs)  # echoed, scrubbed
    assert_no_keys(out, proc.stdout, proc.stderr, refused.stdout, refused.stderr)
    assert_no_keys(tmp_path / "refused")
