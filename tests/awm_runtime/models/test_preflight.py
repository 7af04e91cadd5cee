"""Preflight against loopback servers: one actionable line per problem, nothing when all is well."""

from __future__ import annotations

import socket

import pytest
from aiohttp import web

from awm_runtime import ConfigError
from awm_runtime.models import ModelConfig, preflight
from awm_runtime.models._exceptions import classify
from awm_runtime.testing import FakeOpenAI, Reply

KEY = "pf-key-0123456789"


def cfg(alias: str, url: str, model: str = "openai/fake-model", **extra: object) -> ModelConfig:
    return ModelConfig(alias=alias, model=model, api_base=url, api_key_env="PF_KEY", **extra)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PF_KEY", KEY)


async def test_all_good_sends_one_tiny_completion_per_alias_with_tools_for_native() -> None:
    with FakeOpenAI(key=KEY, models=("fake-model", "other")) as s:
        await preflight([("policy", cfg("p", s.url)), ("expert", cfg("e", s.url, "openai/other", protocol="hermes")),
                         ("policy", cfg("p", s.url))])
    assert len(s.requests) == 2
    by_model = {r["model"]: r for r in s.requests}
    assert by_model["fake-model"]["max_tokens"] == 8 and by_model["fake-model"]["tools"]
    assert "tools" not in by_model["other"]


async def test_quick_skips_the_completion_and_off_checks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(key=KEY) as s:
        await preflight([("policy", cfg("p", s.url))], mode="quick")
    assert s.requests == []
    monkeypatch.delenv("PF_KEY")
    await preflight([("policy", cfg("p", "http://127.0.0.1:9/v1"))], mode="off")


async def test_every_problem_is_one_line_saying_how_to_fix_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTHER_KEY", "wrong-key-000000")
    with FakeOpenAI(key=KEY) as dead:
        dead_url = dead.url  # a port nobody listens on any more
    with FakeOpenAI(key=KEY, models=("served",)) as s:
        configs = [
            ("policy", cfg("unserved", s.url, "hosted_vllm/Qwen/Qwen3-4B")),
            ("expert", ModelConfig(alias="nokey", model="openai/x", api_base=s.url, api_key_env="MISSING_VAR_X")),
            ("judge", ModelConfig(alias="badkey", model="openai/served", api_base=s.url + "/",
                                  api_key_env="OTHER_KEY")),
            ("policy", cfg("gone", dead_url)),
            ("sim", ModelConfig(alias="sim/novice", model="sim/novice")),
        ]
        with pytest.raises(ConfigError) as info:
            await preflight(configs)
    lines = str(info.value).splitlines()
    assert len(lines) == 4, lines
    text = "\n".join(lines)
    assert "export MISSING_VAR_X=" in text and "--expert-key-env VAR" in text
    assert "does not serve 'Qwen/Qwen3-4B'" in text and "--policy-model" in text and "served" in text
    assert "rejected the key in OTHER_KEY" in text
    assert f"cannot reach {dead_url}" in text and "--policy-base URL" in text
    assert KEY not in text and "wrong-key-000000" not in text


async def test_a_refused_test_completion_fails_before_the_run() -> None:
    server = FakeOpenAI(key=KEY, default=Reply.error(400, "unsupported parameter: foo"))
    with server as s, pytest.raises(ConfigError) as info:
        await preflight([("policy", cfg("p", s.url, params={"foo": 1}))])
    assert "unsupported parameter: foo" in str(info.value) and "--preflight quick" in str(info.value)


@pytest.mark.parametrize("reply", [Reply.error(429, retry_after="1"), Reply.error(503)])
async def test_a_busy_endpoint_passes(reply: Reply) -> None:
    with FakeOpenAI(key=KEY, default=reply) as s:
        await preflight([("policy", cfg("p", s.url))])


def test_a_broken_install_is_fatal_not_retryable() -> None:
    try:
        try:
            import awm_runtime_no_such_module  # type: ignore[import-not-found]  # noqa: F401
        except ImportError as inner:
            raise RuntimeError("Connection error.") from inner
    except RuntimeError as exc:
        assert classify(exc) == "fatal"


async def test_anthropic_and_gemini_endpoints_are_checked_with_their_own_key_headers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from awm_runtime.models._serving import read_facts, takes_tools, tools_problem
    from awm_runtime.testing import FakeAnthropic, FakeGemini

    with FakeAnthropic(key=KEY, models=("claude-x",)) as a, FakeGemini(key=KEY, models=("gemini-x",)) as g:
        claude, gemini = cfg("c", a.url, "anthropic/claude-x"), cfg("g", g.url, "gemini/gemini-x")
        await preflight([("expert", claude), ("judge", gemini)], mode="quick")  # keys and model lists pass
        with pytest.raises(ConfigError) as info:
            await preflight([("expert", cfg("c", a.url, "anthropic/claude-y")),
                             ("judge", cfg("g", g.url, "gemini/gemini-y"))], mode="quick")
        lines = str(info.value).splitlines()
        assert len(lines) == 2 and "does not serve 'claude-y' (it serves: claude-x)" in lines[0]
        assert "does not serve 'gemini-y' (it serves: gemini-x)" in lines[1]
        monkeypatch.setenv("PF_KEY", "wrong-key")
        with pytest.raises(ConfigError) as wrong:
            await preflight([("expert", claude), ("judge", gemini)], mode="quick")
        assert [line.count("rejected the key in PF_KEY") for line in str(wrong.value).splitlines()] == [1, 1]
        monkeypatch.setenv("PF_KEY", KEY)
        from awm_runtime.models._litellm import litellm

        litellm()  # imported first (seconds on a busy machine), so the probe's own timeout is not spent on it
        await preflight([("policy", claude), ("judge", gemini)])  # full: one tiny completion each, tools included
        assert a.requests[-1]["tools"][0]["name"] == "noop" and a.requests[-1]["max_tokens"] == 8
        assert g.requests[-1]["_model"] == "gemini-x"
        # Tools reach these models by API contract: no OpenAI-shaped probe is sent to them.
        import httpx

        sent = len(a.requests)
        async with httpx.AsyncClient() as client:
            facts = await read_facts(claude, client)
            assert takes_tools(claude) and await tools_problem(claude, facts, client, completions=True) is None
        assert facts.kind == "other" and len(a.requests) == sent


async def test_a_thinking_alias_is_probed_with_its_own_max_tokens_and_its_params_untouched() -> None:
    """Anthropic refuses a thinking budget that is not below max_tokens: 8 tokens would fail a good alias."""
    from awm_runtime.testing import FakeAnthropic

    params = {"max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 2048}}
    with FakeAnthropic(key=KEY, models=("claude-x",)) as a:
        config = cfg("c", a.url, "anthropic/claude-x", params=dict(params), protocol="native")
        await preflight([("policy", config)])
    assert a.refused == [] and a.requests[-1]["max_tokens"] == 4096
    assert config.params == params  # the probe's tool is not left in the alias's params


@pytest.mark.parametrize(("reply", "said"), [
    (Reply.error(401, "key revoked for completions"),
     "policy model 'p': the endpoint rejected the key in PF_KEY: HTTP 401: key revoked for completions"),
    (Reply.error(404, "no such model"), "policy model 'p': the endpoint does not know 'openai/fake-model': HTTP 404: "
                                     "no such model; fix model under [models.p] in awm.toml, or --policy-model"),
])
async def test_a_test_completion_refused_by_class_says_what_to_fix(reply: Reply, said: str) -> None:
    with FakeOpenAI(key=KEY, default=reply) as s, pytest.raises(ConfigError) as info:  # /models answers fine
        await preflight([("policy", cfg("p", s.url))])
    [line] = str(info.value).splitlines()
    assert said in line and KEY not in line


async def test_an_alias_without_api_base_is_checked_where_openai_base_url_points(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(key="another-key-000") as s:
        monkeypatch.setenv("OPENAI_BASE_URL", s.url)
        config = ModelConfig(alias="hosted", model="openai/fake-model", api_key_env="PF_KEY")
        with pytest.raises(ConfigError, match=rf"hosted.*: {s.url} rejected the key in PF_KEY \(HTTP 401\)"):
            await preflight([("policy", config)], mode="quick")


@pytest.mark.parametrize(("status", "body"), [(405, "no model list here"), (200, "[not json")])
async def test_an_endpoint_that_answers_without_a_model_list_passes_the_endpoint_check(status: int, body: str) -> None:
    """Some servers have no /models, or answer it with something else: that the endpoint answered is the check."""
    async def models(_: web.Request) -> web.Response:
        return web.Response(status=status, text=body)

    app = web.Application()
    app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app)
    await runner.setup()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        await web.SockSite(runner, sock).start()
        try:
            await preflight([("policy", cfg("p", f"http://127.0.0.1:{sock.getsockname()[1]}/v1"))], mode="quick")
        finally:
            await runner.cleanup()
