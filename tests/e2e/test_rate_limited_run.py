"""A hosted endpoint under load answers 429 on every third request: the preflight waits it out and the run
runs every episode (issue 29). The probe used to read the 429 as "it refuses requests with tools"."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from awm_runtime.testing import FakeOpenAI, Reply, sim_responder, teach_builtin
from tests.e2e.test_awm_run import awm_run, records


def every_third_is_429(inner: Any) -> Any:
    count = 0
    lock = threading.Lock()

    def respond(request: dict[str, Any]) -> Reply:
        nonlocal count
        with lock:
            count += 1
            limited = count % 3 == 0
        if limited:
            return Reply.error(429, "Rate limit reached for requests", retry_after="0.1")
        return inner(request)

    return respond


def test_an_endpoint_that_rate_limits_every_third_request_passes_the_preflight(tmp_path: Path) -> None:
    teach_builtin()
    with FakeOpenAI(key="limited-key-29", models=("hosted-29",), responder=every_third_is_429(sim_responder("oracle")),
                    max_lifetime_s=240) as server:
        config = tmp_path / "awm.toml"
        config.write_text(f'[models.hosted]\nmodel = "openai/hosted-29"\napi_base = "{server.url}"\n'
                          f'api_key_env = "LIMITED_29"\nprotocol = "native"\nmax_concurrency = 4\n')
        out = tmp_path / "run"
        proc = awm_run("--config", str(config), "--policy", "hosted", "--expert", "none", "--scenarios", "homehub*",
                       "--tasks", "0-4", "--preflight", "full", "--out", str(out), "--quiet",
                       env={"LIMITED_29": "limited-key-29"})
        limited = sum(1 for r in server.requests if r.get("messages"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "refuses requests with tools" not in proc.stderr
    recs = records(out)
    assert len(recs) == 5 and all(r["outcome"] == "complete" for r in recs), [r["error"] for r in recs]
    assert limited >= 3 * 5  # every episode's turns, a third of the requests answered 429 and retried
