"""The run refuses, before any episode, a world whose first prompt cannot fit, and native tools that vanish."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import ConfigError, RunConfig
from awm_runtime.scheduler import prepare
from awm_runtime.testing import FakeOpenAI, Reply

KEY = "fit-key-0123456789"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIT_KEY", KEY)


def config(tmp_path: Path, url: str, worlds: Path | str, *, alias_protocol: str = "hermes", extra: str = "",
           **run: Any) -> RunConfig:
    toml = tmp_path / "awm.toml"
    toml.write_text(f'[models.served]\nmodel = "openai/served"\napi_base = "{url}"\napi_key_env = "FIT_KEY"\n'
                    f'protocol = "{alias_protocol}"\n{extra}')
    return RunConfig(**{"policy": "served", "expert": "none", "worlds": str(worlds), "config_path": toml,
                        "out": tmp_path / "run", "shards": 1, **run})


async def expect_refusal(cfg: RunConfig) -> list[str]:
    with pytest.raises(ConfigError) as info:
        prep = await prepare(cfg)
        await prep.world.aclose()
    return str(info.value).splitlines()


async def test_a_world_over_the_window_is_refused_with_world_tokens_and_window(tmp_path: Path) -> None:
    with FakeOpenAI(key=KEY, models=("served",), max_model_len=2000) as s:
        lines = await expect_refusal(config(tmp_path, s.url, "builtin", scenarios="homehub*,shopfront*",
                                            extra="params = { max_tokens = 256 }\n"))
    assert len(lines) == 2, lines
    assert lines[0].startswith("world 'homehub_smart_home': the first hermes prompt of arm 'main' is ")
    assert "plus max_tokens 256" in lines[0] and "2,000-token context window of 'served'" in lines[0]
    assert "vLLM /v1/models max_model_len" in lines[0] and "counted by the server's tokenizer" in lines[0]
    assert [r["max_tokens"] for r in s.requests] == [8]  # the preflight's test completion; no episode started
    assert {b["model"] for b in s.tokenized} == {"served"}


async def test_worlds_that_fit_pass_and_the_count_includes_ask_expert(tmp_path: Path, tiny_dir: Path) -> None:
    with FakeOpenAI(key=KEY, models=("served",), max_model_len=100_000) as s:
        prep = await prepare(config(tmp_path, s.url, tiny_dir, alias_protocol="native", expert="sim/oracle",
                                    preflight="quick"))
        await prep.world.aclose()
    (body,) = s.tokenized
    assert [t["function"]["name"] for t in body["tools"]][-1] == "ask_expert"  # what the episode will offer


async def test_an_estimate_refuses_only_with_a_window_from_the_alias(tmp_path: Path) -> None:
    with FakeOpenAI(key=KEY, models=("served",)) as s:
        lines = await expect_refusal(config(tmp_path, s.url, "builtin", scenarios="homehub*", preflight="quick",
                                            extra="context_window = 8192\n"))
        unknown = await prepare(config(tmp_path, s.url, "builtin", scenarios="homehub*", preflight="quick"))
        await unknown.world.aclose()
    assert len(lines) == 1 and "estimated at 4 characters a token" in lines[0]
    assert "8,192-token context window of 'served' (the alias's context_window)" in lines[0]


def drops_tools(request: dict[str, Any]) -> Reply:
    """A chat template without tool support: the prompt billed is the messages' alone, whatever the tools."""
    tokens = 16 + sum(len(str(m.get("content") or "")) for m in request["messages"]) // 4
    return Reply(content="OK", usage={"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1})


async def test_native_tools_that_never_reach_the_model_are_refused_suggesting_hermes(tmp_path: Path,
                                                                                      tiny_dir: Path) -> None:

    with FakeOpenAI(key=KEY, models=("served",), responder=drops_tools) as s:
        lines = await expect_refusal(config(tmp_path, s.url, tiny_dir, alias_protocol="native"))
        hermes = await prepare(config(tmp_path, s.url, tiny_dir, alias_protocol="native", protocol="hermes"))
        await hermes.world.aclose()
    assert len(lines) == 1
    assert lines[0].startswith("arm 'main': policy 'served' speaks protocol native, but a tool added no prompt "
                               "tokens (20 with and without it)")
    assert 'use protocol = "hermes"' in lines[0]


async def test_the_quick_preflight_sends_no_probe_completion(tmp_path: Path, tiny_dir: Path) -> None:
    with FakeOpenAI(key=KEY, models=("served",)) as s:
        prep = await prepare(config(tmp_path, s.url, tiny_dir, alias_protocol="native", preflight="quick"))
        await prep.world.aclose()
    assert s.requests == []


async def test_remote_worlds_get_the_native_check_but_no_fit(tmp_path: Path) -> None:
    """A remote world names its tools only when an episode opens a session: no prompt is counted for it,
    however small the window; the native check needs no world and still refuses."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task": "Echo hi."}\n')
    script = tmp_path / "server.py"
    script.write_text("from mcp.server.fastmcp import FastMCP\nmcp = FastMCP('echo')\n"
                      "@mcp.tool()\ndef echo(text: str) -> str:\n    return text\nmcp.run()\n")
    worlds = f"mcp+stdio:{sys.executable} {script}"


    with FakeOpenAI(key=KEY, models=("served",), responder=drops_tools, max_model_len=16) as s:
        prep = await prepare(config(tmp_path, s.url, worlds, tasks_file=tasks))
        await prep.world.aclose()
        assert s.tokenized == []  # a 16-token window, and nothing counted: remote worlds are not fitted
        lines = await expect_refusal(config(tmp_path, s.url, worlds, alias_protocol="native", tasks_file=tasks))
    assert len(lines) == 1 and lines[0].startswith("arm 'main': policy 'served' speaks protocol native, but ")


async def test_the_full_preflight_waits_on_a_slow_model_once_not_once_per_probe(tmp_path: Path,
                                                                                tiny_dir: Path) -> None:
    """Every probe of the full preflight (the test completion, the native tools check's pair) waits for a
    model reply: they go out side by side, so a model that takes 2 s a reply costs about 2 s before the
    run, not 2 s a probe. Pinned by when the requests arrived, not by a wall-clock bound."""
    import time

    arrived: list[float] = []

    def slow(request: dict[str, Any]) -> Reply:  # bills the tools it is given, like a template that renders them
        arrived.append(time.monotonic())
        tokens = 16 + len(str(request["messages"])) // 4 + 50 * len(request.get("tools") or ())
        return Reply(content="OK", delay_s=2.0,
                     usage={"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1})

    with FakeOpenAI(key=KEY, models=("served",), responder=slow) as s:
        prep = await prepare(config(tmp_path, s.url, tiny_dir, alias_protocol="native"))
        await prep.world.aclose()
    assert len(arrived) >= 3, s.requests  # the test completion and the native check's completions
    assert max(arrived) - min(arrived) < 1.0, [round(t - min(arrived), 2) for t in arrived]


async def test_the_preflight_keeps_an_aliases_max_concurrency(tmp_path: Path, tiny_dir: Path) -> None:
    """An alias that allows two calls at once never gets three from the preflight: the probes then take turns."""

    def slow(request: dict[str, Any]) -> Reply:
        tokens = 16 + len(str(request["messages"])) // 4 + 50 * len(request.get("tools") or ())
        return Reply(content="OK", delay_s=0.5,
                     usage={"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1})

    with FakeOpenAI(key=KEY, models=("served",), responder=slow) as s:
        prep = await prepare(config(tmp_path, s.url, tiny_dir, alias_protocol="native", extra="max_concurrency = 2\n"))
        await prep.world.aclose()
        assert len(s.requests) >= 3 and s.max_in_flight <= 2, (len(s.requests), s.max_in_flight)
