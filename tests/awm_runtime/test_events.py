"""Model-layer events reach the episode's sinks and events.jsonl, with timings: calls, retries, failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from awm_runtime import RunConfig
from awm_runtime._events import ModelCalled, bind_emitter, model_called
from awm_runtime.models import reset_limiters
from awm_runtime.scheduler import prepare, run
from awm_runtime.testing import FakeOpenAI, Reply, sim_responder, teach_builtin


def test_model_hooks_are_silent_outside_an_episode_and_bound_inside() -> None:
    got: list[object] = []
    model_called(role="policy", alias="a", endpoint="e", latency_s=0.1)
    with bind_emitter("ep1", got.append):
        model_called(role="policy", alias="a", endpoint="e", latency_s=0.1, attempt=2)
    assert got == [ModelCalled("ep1", role="policy", alias="a", endpoint="e", latency_s=0.1, attempt=2)]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_retries_and_failures_are_events_with_timings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    teach_builtin()
    reset_limiters()
    monkeypatch.setenv("LOOP_KEY", "loop-key-000111")
    script = [Reply.error(429, "slow down", retry_after="0"), Reply.error(400, "bad request")]
    with FakeOpenAI(key="loop-key-000111", script=script, responder=sim_responder("oracle"),
                    max_lifetime_s=120) as server:
        toml = tmp_path / "awm.toml"
        toml.write_text(f'[models.loop]\nmodel = "openai/fake-model"\napi_base = "{server.url}"\n'
                        f'api_key_env = "LOOP_KEY"\nprotocol = "native"\nmax_concurrency = 1\n')
        config = RunConfig(policy="loop", expert="none", scenarios="shop*", tasks="0,1", concurrency=1,
                           config_path=toml, out=tmp_path / "run", shards=1, preflight="quick")
        result = await run(await prepare(config))
    events = [json.loads(x) for x in (result.out / "events.jsonl").read_text().splitlines()]
    retry = next(e for e in events if e["event"] == "model_retry")
    assert retry["kind"] == "rate_limit" and retry["wait_s"] == 0 and retry["episode_id"]
    failed = next(e for e in events if e["event"] == "model_failed")
    assert failed["kind"] == "bad_request" and failed["attempts"] == 2 and failed["episode_id"] == retry["episode_id"]
    called = [e for e in events if e["event"] == "model_called"]
    assert called and all(e["latency_s"] > 0 and e["endpoint"] == server.url for e in called)
    assert failed["elapsed_s"] >= 0 and all(e["episode_id"] != failed["episode_id"] for e in called)
    outcomes = sorted(json.loads(x)["outcome"] for x in (result.out / "episodes.jsonl").read_text().splitlines())
    assert outcomes == ["complete", "error"]  # the 400 ended one episode as an infrastructure error
    assert "loop-key-000111" not in (result.out / "events.jsonl").read_text()
