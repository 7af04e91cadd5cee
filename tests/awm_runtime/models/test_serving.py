"""What servers say about themselves: windows, token counts and the native-tools probe, over real HTTP.

vLLM's shapes are played by the loopback server (`FakeOpenAI(max_model_len=...)`); llama.cpp's are real
bodies recorded from llama-server (tests/fixtures/llama_cpp), served back verbatim by a small app. The real
server itself is exercised in tests/e2e/test_local_model.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from awm_runtime.models import ModelConfig
from awm_runtime.models._serving import count_prompt, estimate, read_facts, tools_problem
from awm_runtime.testing import FakeOpenAI, Reply

FIXTURES = Path(__file__).parents[2] / "fixtures" / "llama_cpp"
KEY = "serving-key-0123456"
MESSAGES = [{"role": "system", "content": "You help."}, {"role": "user", "content": "Look up order 7."}]
TOOLS = [{"type": "function", "function": {"name": "f", "description": "x" * 400, "parameters": {}}}]


def recorded(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())["body"]  # type: ignore[no-any-return]


def cfg(url: str, **extra: Any) -> ModelConfig:
    return ModelConfig(alias="m", model="openai/smollm2", api_base=url, api_key_env="SERVING_KEY", **extra)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVING_KEY", KEY)


@pytest.fixture
def llama_cpp_like() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """llama-server's /props, /apply-template and /tokenize answers, as recorded, behind a bearer key."""
    import uvicorn

    from awm_runtime._sockets import bound_tcp_socket

    seen: list[dict[str, Any]] = []
    app = FastAPI()

    def denied(request: Request) -> JSONResponse | None:
        if request.headers.get("authorization") == f"Bearer {KEY}":
            return None
        return JSONResponse(recorded("auth_401"), status_code=401)

    @app.get("/props")
    async def props(request: Request) -> JSONResponse:
        return denied(request) or JSONResponse(recorded("props"))

    @app.post("/apply-template")
    async def apply_template(request: Request) -> JSONResponse:
        body = await request.json()
        seen.append({"path": "/apply-template", **body})
        prompt = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in body["messages"])
        return denied(request) or JSONResponse({"prompt": prompt + "<|im_start|>assistant\n"})

    @app.post("/tokenize")
    async def tokenize(request: Request) -> JSONResponse:
        body = await request.json()
        seen.append({"path": "/tokenize", **body})
        return denied(request) or JSONResponse({"tokens": list(range(len(body["content"]) // 3))})

    sock = bound_tcp_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.01)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1", seen
    server.should_exit = True
    thread.join(10)


async def test_llama_cpp_window_tools_caps_and_exact_count(llama_cpp_like: tuple[str, list[dict[str, Any]]]) -> None:
    url, seen = llama_cpp_like
    async with httpx.AsyncClient(timeout=10) as client:
        facts = await read_facts(cfg(url), client)
        assert (facts.kind, facts.window, facts.supports_tools) == ("llama.cpp", 2048, False)
        assert "/props" in facts.window_from
        count = await count_prompt(cfg(url), facts, MESSAGES, TOOLS, client)
        problem = await tools_problem(cfg(url), facts, client, completions=False)
    assert count.exact and count.tokens > 0
    assert seen[0]["path"] == "/apply-template" and seen[0]["tools"] == TOOLS  # the template sees the tools
    assert seen[1]["path"] == "/tokenize" and seen[1]["parse_special"] is True and seen[1]["add_special"] is False
    assert problem is not None and "supports_tools = false" in problem


async def test_a_smaller_context_window_on_the_alias_wins(llama_cpp_like: tuple[str, list[dict[str, Any]]]) -> None:
    url, _ = llama_cpp_like
    async with httpx.AsyncClient(timeout=10) as client:
        facts = await read_facts(cfg(url, context_window=1000), client)
        larger = await read_facts(cfg(url, context_window=100_000), client)
    assert (facts.window, facts.window_from) == (1000, "the alias's context_window")
    assert larger.window == 2048


async def test_vllm_window_and_chat_tokenize_with_tools() -> None:
    with FakeOpenAI(key=KEY, models=("smollm2",), max_model_len=4096) as s:
        async with httpx.AsyncClient(timeout=10) as client:
            facts = await read_facts(cfg(s.url), client)
            with_tools = await count_prompt(cfg(s.url), facts, MESSAGES, TOOLS, client)
            without = await count_prompt(cfg(s.url), facts, MESSAGES, None, client)
    assert (facts.kind, facts.window) == ("vllm", 4096) and "max_model_len" in facts.window_from
    assert with_tools.exact and with_tools.tokens > without.tokens
    assert s.tokenized[0]["tools"] == TOOLS and s.tokenized[0]["model"] == "smollm2"
    assert s.tokenized[0]["add_generation_prompt"] is True


async def test_an_unknown_server_estimates_and_takes_the_alias_window() -> None:
    with FakeOpenAI(key=KEY, models=("smollm2",)) as s:
        async with httpx.AsyncClient(timeout=10) as client:
            facts = await read_facts(cfg(s.url, context_window=8192), client)
            count = await count_prompt(cfg(s.url), facts, MESSAGES, TOOLS, client)
            bare = await read_facts(cfg(s.url), client)
    assert (facts.kind, facts.window) == ("other", 8192) and bare.window is None
    assert not count.exact and count.tokens == estimate(MESSAGES, TOOLS)
    assert s.requests == []  # no completion spent on counting


async def test_native_probe_by_completions_sees_dropped_and_refused_tools() -> None:
    def drops_tools(request: dict[str, Any]) -> Reply:  # a template without tool support bills only the messages
        words = sum(len(str(m.get("content") or "")) for m in request["messages"]) // 4
        return Reply(content="ok", usage={"prompt_tokens": words, "completion_tokens": 1, "total_tokens": words + 1})

    def refuses_tools(request: dict[str, Any]) -> Reply:  # llama-server run with --no-jinja, verbatim
        if request.get("tools"):
            return Reply.error(500, "tools param requires --jinja flag")
        return Reply(content="ok")

    quick = {"backoff_s": 0.01}  # the 500 is retried under the alias's policy before it counts as an answer
    async with httpx.AsyncClient(timeout=10) as client:
        with FakeOpenAI(key=KEY, models=("smollm2",)) as honest:
            facts = await read_facts(cfg(honest.url), client)
            assert await tools_problem(cfg(honest.url), facts, client, completions=True) is None
            assert await tools_problem(cfg(honest.url), facts, client, completions=False) is None
        assert sorted("tools" in r for r in honest.requests) == [False, True]
        assert all(r["max_tokens"] == 1 for r in honest.requests)
        with FakeOpenAI(key=KEY, models=("smollm2",), responder=drops_tools) as dropping:
            dropped = await tools_problem(cfg(dropping.url), facts, client, completions=True)
        with FakeOpenAI(key=KEY, models=("smollm2",), responder=refuses_tools) as refusing:
            refused = await tools_problem(cfg(refusing.url, **quick), facts, client, completions=True)
    assert dropped is not None and "with and without it" in dropped and "drops tools" in dropped
    assert refused is not None and "HTTP 500" in refused and "--jinja" in refused
    assert len(refusing.requests) == 2 + 4  # the plain request, and the tool request with its 4 retries


async def test_a_constant_prompt_token_count_is_not_dropped_tools() -> None:
    """A server that bills the same prompt whatever it is sent cannot tell us anything: not a refusal."""
    def constant(request: dict[str, Any]) -> Reply:
        return Reply(content="ok", usage={"prompt_tokens": 36, "completion_tokens": 1, "total_tokens": 37})

    with FakeOpenAI(key=KEY, models=("smollm2",), responder=constant) as server:
        async with httpx.AsyncClient(timeout=10) as client:
            facts = await read_facts(cfg(server.url), client)
            assert await tools_problem(cfg(server.url), facts, client, completions=True) is None
    assert len(server.requests) == 3  # with and without the tool, and a longer prompt as the control


async def test_the_native_probe_waits_out_rate_limits_and_never_refuses_on_them() -> None:
    """429 on every third request (Retry-After honoured): the probe retries and decides from real answers;
    an endpoint that only ever says 429 is `could not tell`, not a refusal."""
    seen: list[float] = []

    def every_third(request: dict[str, Any]) -> Reply:
        seen.append(time.monotonic())
        if len(seen) % 3 == 0:
            return Reply.error(429, "rate limit reached", retry_after="0.2")
        return Reply(content="ok", usage={"prompt_tokens": len(json.dumps(request)) // 4, "completion_tokens": 1,
                                          "total_tokens": 1})

    def always_429(request: dict[str, Any]) -> Reply:
        return Reply.error(429, "rate limit reached", retry_after="0")

    async with httpx.AsyncClient(timeout=10) as client:
        with FakeOpenAI(key=KEY, models=("smollm2",), responder=every_third) as limited:
            facts = await read_facts(cfg(limited.url), client)
            for _ in range(3):  # whichever request of the probe gets the 429
                assert await tools_problem(cfg(limited.url), facts, client, completions=True) is None
        with FakeOpenAI(key=KEY, models=("smollm2",), responder=always_429) as hopeless:
            assert await tools_problem(cfg(hopeless.url, retries={"rate_limit": 2}), facts, client,
                                       completions=True) is None
    assert len(seen) >= 7
    assert len(hopeless.requests) == 2 * 3  # two probe requests, each tried 1 + 2 times


async def test_the_native_probe_waits_as_long_as_a_call_would_and_does_not_repeat_a_timeout() -> None:
    """A model slower than the probe's HTTP client timeout (a 30 s reasoning model against a 30 s client: three
    timeouts, 90 s, and `could not tell`) is waited for up to the alias's timeout_s, once."""
    def slow(request: dict[str, Any]) -> Reply:
        return Reply(content="ok", delay_s=1.5, usage={"prompt_tokens": len(json.dumps(request)) // 4,
                                                       "completion_tokens": 1, "total_tokens": 1})

    def hung(request: dict[str, Any]) -> Reply:
        return Reply(content="ok", hang=True)

    async with httpx.AsyncClient(timeout=0.5) as client:
        with FakeOpenAI(key=KEY, models=("smollm2",), responder=slow) as server:
            facts = await read_facts(cfg(server.url), client)
            with structlog.testing.capture_logs() as logs:
                assert await tools_problem(cfg(server.url, timeout_s=5), facts, client, completions=True) is None
            assert logs == [] and len(server.requests) == 2  # definite answers, with and without the tool
        with FakeOpenAI(key=KEY, models=("smollm2",), responder=hung) as server:
            started = time.monotonic()
            with structlog.testing.capture_logs() as logs:
                assert await tools_problem(cfg(server.url, timeout_s=1), facts, client, completions=True) is None
            # Each tried once, each cut at this check's 1-s timeout (the 5 s of the check above would take 10 s).
            assert time.monotonic() - started < 10 and len(server.requests) == 2
            assert [e["event"] for e in logs] == ["preflight_native_tools_unknown"]
