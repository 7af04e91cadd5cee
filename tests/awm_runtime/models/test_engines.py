"""A token-in/token-out engine's requests fail by class, over real HTTP to a loopback server: each HTTP
answer, a body that is not JSON, a server that is not an engine, no answer in time, nobody listening."""

from __future__ import annotations

import socket

import pytest

from awm_runtime.models._engines import Engine, EngineFailure
from awm_runtime.testing import FakeOpenAI, Reply

BODY = {"messages": [{"role": "user", "content": "hi"}]}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(("reply", "kind", "said"), [
    (Reply.error(503, "overloaded"), "server", "/chat/completions: HTTP 503: "),
    (Reply.error(429, "slow down"), "rate_limit", "/chat/completions: HTTP 429: "),
    (Reply.error(400, "This model's maximum context length is 8 tokens"), "context", "/chat/completions: HTTP 400: "),
    (Reply.error(400, "budget_exceeded"), "bad_request", "/chat/completions: HTTP 400: "),
    (Reply(body="<html>gateway</html>"), "server", "/chat/completions: not JSON: <html>gateway</html>"),
])
async def test_each_failed_answer_is_classed(reply: Reply, kind: str, said: str) -> None:
    with FakeOpenAI(key="k", script=[reply]) as server, pytest.raises(EngineFailure) as info:
        await Engine(server.url, "k").post("/chat/completions", BODY, 10, root=False)
    assert (info.value.kind, info.value.detail.startswith(said)) == (kind, True), info.value.detail
    assert "\n" not in info.value.detail


async def test_a_good_answer_is_the_parsed_body_and_the_key_is_sent() -> None:
    with FakeOpenAI(key="k", script=[Reply(content="hello")]) as server:
        engine = Engine(server.url + "/", "k")
        answer = await engine.post("/chat/completions", BODY, 10, root=False)
        assert answer["choices"][0]["message"]["content"] == "hello"
        assert server.requests[0]["_auth"] == "Bearer k"
    assert engine.v1 == server.url and engine.root == server.url.removesuffix("/v1")


async def test_a_server_without_the_endpoint_is_not_an_engine() -> None:
    with FakeOpenAI() as server, pytest.raises(EngineFailure) as info:  # no /tokenize: not vLLM nor llama.cpp
        await Engine(server.url, None).post("/tokenize", BODY, 10)
    assert info.value.kind == "fatal" and "has no /tokenize (HTTP 404): tito needs llama.cpp's llama-server or vLLM" \
        in info.value.detail


async def test_no_answer_in_time_is_a_timeout_and_nobody_listening_a_connection_failure() -> None:
    with FakeOpenAI(script=[Reply(hang=True)]) as server, pytest.raises(EngineFailure) as info:
        await Engine(server.url, None).post("/chat/completions", BODY, 0.3, root=False)
    assert (info.value.kind, info.value.detail) == ("timeout", "/chat/completions: no answer in 0.3s")
    with pytest.raises(EngineFailure) as info:
        await Engine(f"http://127.0.0.1:{closed_port()}/v1", None).post("/tokenize", BODY, 5)
    assert info.value.kind == "connection" and info.value.detail.startswith("/tokenize: ClientConnectorError: ")
