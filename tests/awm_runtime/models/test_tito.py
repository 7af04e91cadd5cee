"""Token in, token out against the loopback server speaking vLLM's token fields (/tokenize, /v1/completions).

The engine is the ChatML toy of `awm_runtime.testing` (a byte tokenizer, so every id decodes back to text);
it answers as the simulated novice would, reading its token prompt back as a chat. Nothing is mocked above
the HTTP wire: the requests checked here are the bodies the server received.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import ConfigError, Message, ModelError
from awm_runtime.export import ExportStats, grpo, run_source
from awm_runtime.integrations.trl import Rollouts, make_rollout_func
from awm_runtime.logs import iter_records
from awm_runtime.models import ModelClient, load_registry, preflight
from awm_runtime.models._tito import SEQUENCE_KEY
from awm_runtime.policies.protocols import ToolProtocol
from awm_runtime.testing import ChatML, ChatMLEngine, FakeOpenAI, Reply, sim_responder, teach_builtin
from awm_runtime.testing._tokens import IM_END

KEY = "loop-key-tito-0001"


@pytest.fixture(scope="module")
def engine() -> Iterator[FakeOpenAI]:
    teach_builtin()
    # a byte tokenizer: the shopfront's 44 tools are ~51k ids
    with FakeOpenAI(key=KEY, models=("loop-model",), max_lifetime_s=600, token_engine=ChatMLEngine(),
                    max_model_len=1 << 20,
                    responder=sim_responder("novice", {"give_up_rate": 0.0, "wrong_call_rate": 0.5})) as server:
        yield server


def config(tmp_path: Path, url: str, *, model: str = "hosted_vllm/loop-model", protocol: str = "hermes",
           extra: str = "") -> Path:
    path = tmp_path / "awm.toml"
    path.write_text(f'[models.loop-tito]\nmodel = "{model}"\napi_base = "{url}"\napi_key_env = "LOOP_KEY"\n'
                    f'protocol = "{protocol}"\ntito = true\nmax_concurrency = 8\n{extra}')
    return path


@pytest.fixture
def rollouts(tmp_path: Path, engine: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rollouts]:
    monkeypatch.setenv("LOOP_KEY", KEY)
    with make_rollout_func(policy="loop-tito", expert="sim/oracle", config_path=config(tmp_path, engine.url),
                           scenarios="shopfront*", tasks="0-1", preflight="full", reward="try-first", max_turns=8,
                           expert_ratio="0.5", out=tmp_path / "rollouts") as r:
        yield r


def sequence(replies: list[dict[str, Any]], upto: int) -> list[int]:
    """The exact tokens before reply `upto` is generated: every earlier delta and reply, then its own delta."""
    out: list[int] = []
    for m in replies[:upto]:
        out += m["prompt_delta_ids"] + m["token_ids"]
    return out + replies[upto]["prompt_delta_ids"]


def test_each_request_is_the_previous_sequence_plus_the_delta_and_ids_decode_to_the_transcript(
        rollouts: Rollouts, engine: FakeOpenAI, tmp_path: Path) -> None:
    engine.completions.clear()
    prompt = rollouts.rows()[0]["prompt"]
    out = rollouts([prompt] * 4, None)
    sent = [tuple(b["prompt"]) for b in engine.completions]
    assert all(b.get("return_token_ids") and b.get("logprobs") is not None for b in engine.completions)
    records = {r["episode_id"]: r for r in iter_records(tmp_path / "rollouts")}
    assert max(out["turns"]) >= 4
    for i, eid in enumerate(out["episode_id"]):
        record = records[eid]
        replies = [m for m in record["messages"] if m["source"] == "policy"]
        wire = ToolProtocol("hermes").wire([Message(**{k: v for k, v in m.items() if k in Message.model_fields})
                                            for m in record["messages"]])
        at = [k for k, m in enumerate(record["messages"]) if m["source"] == "policy"]
        for t, m in enumerate(replies):
            prompt_t = sequence(replies, t)
            assert tuple(prompt_t) in sent  # the request the engine received, token for token
            if t:
                before = sequence(replies, t - 1) + replies[t - 1]["token_ids"]
                assert prompt_t[:len(before)] == before  # the previous sequence, then only the delta
                # the delta is what the template puts after the reply: its model-sampled <|im_end|> not repeated
                assert replies[t - 1]["token_ids"][-1] == IM_END
                assert ChatML.decode(m["prompt_delta_ids"]) == \
                    ChatML.render(wire[:at[t]])[len(ChatML.render(wire[:at[t - 1] + 1], generation_prompt=False)) - 1:]
            # this template appends, so the exact sequence is also its full re-render
            assert prompt_t == ChatML.encode(ChatML.render(wire[:at[t]]))
        ids = out["prompt_ids"][i] + out["completion_ids"][i]
        assert ids == sequence(replies, len(replies) - 1) + replies[-1]["token_ids"]
        assert ChatML.decode(ids) == ChatML.render(wire[:at[-1] + 1], generation_prompt=False)[:-1]
        mask = [0] * len(out["prompt_ids"][i]) + out["env_mask"][i]
        generated = [t for t, k in zip(ids, mask, strict=True) if k]
        assert generated == [t for m in replies for t in m["token_ids"]]  # 1 exactly on sampled ids
        assert sum(out["env_mask"][i]) == sum(len(m["token_ids"]) for m in replies)
        assert [lp for lp, k in zip(out["logprobs"][i], out["env_mask"][i], strict=True) if k] == \
            [x for m in replies for x in m["logprobs"]]
        assert out["tokens_reread"][i] == 0 and out["turns_dropped"][i] == 0
    # awm-export's grpo rollout rows carry the sequence: every reply's delta then its ids
    list(grpo(iter_records(tmp_path / "rollouts"), ExportStats(), run_source(tmp_path / "rollouts")))
    rows = [line for line in (tmp_path / "rollouts" / "episodes.jsonl").read_text().splitlines() if line]
    assert rows and all('"prompt_delta_ids"' in line for line in rows)


async def test_a_sequence_past_the_window_is_a_context_overflow_before_it_is_sent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOP_KEY", KEY)
    with FakeOpenAI(key=KEY, models=("loop-model",), token_engine=ChatMLEngine(), max_model_len=64,
                    default=Reply(content="hello")) as server:
        client = ModelClient(load_registry(config(tmp_path, server.url)).get("loop-tito"), "policy")
        short = await client.complete([{"role": "user", "content": "hi"}], params={"max_tokens": 500})
        assert short.finish_reason == "stop" and short.prompt_token_ids is not None
        assert server.completions[-1]["max_tokens"] == 64 - len(short.prompt_token_ids)  # cut to the room left
        with pytest.raises(ModelError) as info:
            await client.complete([{"role": "user", "content": "x" * 80}])
        assert info.value.kind == "context" and "fills the 64-token context window" in str(info.value)
        assert len(server.completions) == 1  # never sent


async def test_a_reply_without_its_token_sequence_is_refused_not_re_rendered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOP_KEY", KEY)
    with FakeOpenAI(key=KEY, models=("loop-model",), token_engine=ChatMLEngine(),
                    default=Reply(content="ok")) as server:
        client = ModelClient(load_registry(config(tmp_path, server.url)).get("loop-tito"), "policy")
        history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                   {"role": "user", "content": "again"}]
        with pytest.raises(ModelError, match="carries no token sequence"):
            await client.complete(history)
        sampled = [*ChatML.encode("hel"), *ChatML.encode("lo"), IM_END]  # whatever the model sampled, kept as is
        reply = await client.complete([*history[:1], {**history[1], SEQUENCE_KEY: sampled}, history[2]])
        sent = server.completions[-1]["prompt"]
        assert sent[:len(sampled)] == sampled and ChatML.decode(sent[len(sampled):]) == \
            "\n<|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n"
        assert reply.prompt_token_ids == sent and reply.token_ids == [*ChatML.encode("ok"), IM_END]


async def test_preflight_refuses_tito_where_the_engine_takes_no_token_ids(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOP_KEY", KEY)
    with FakeOpenAI(key=KEY, models=("loop-model",)) as plain:  # an OpenAI-style API: no token endpoints
        cfg = load_registry(config(tmp_path, plain.url, model="openai/loop-model")).get("loop-tito")
        with pytest.raises(ConfigError) as info:
            await preflight([("policy", cfg)], mode="quick")
        (line,) = str(info.value).splitlines()
        assert "tito = true needs a llama.cpp llama-server or vLLM endpoint" in line and "drop tito" in line
    with pytest.raises(ConfigError, match="tito = true needs protocol"):
        load_registry(config(tmp_path, "http://127.0.0.1:9/v1", protocol="native"))


async def test_the_fit_preflight_counts_the_very_prompt_tito_sends(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    from awm_runtime.models._serving import count_prompt, read_facts

    monkeypatch.setenv("LOOP_KEY", KEY)
    with FakeOpenAI(key=KEY, models=("loop-model",), token_engine=ChatMLEngine(), max_model_len=4096,
                    default=Reply(content="ok")) as server:
        cfg = load_registry(config(tmp_path, server.url)).get("loop-tito")
        messages = [{"role": "system", "content": "You operate a shop."}, {"role": "user", "content": "List orders."}]
        async with httpx.AsyncClient() as client:
            facts = await read_facts(cfg, client)
            count = await count_prompt(cfg, facts, messages, None, client)
        reply = await ModelClient(cfg, "policy").complete(messages)
    assert facts.window == 4096 and count.exact
    assert count.tokens == len(reply.prompt_token_ids or []) == len(ChatML.encode(ChatML.render(messages)))


def test_rollouts_with_tito_refuse_an_engine_that_takes_no_token_ids(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOP_KEY", KEY)
    with FakeOpenAI(key=KEY, models=("loop-model",)) as plain:
        path = tmp_path / "plain.toml"
        path.write_text(f'[models.plain]\nmodel = "openai/loop-model"\napi_base = "{plain.url}"\n'
                        'api_key_env = "LOOP_KEY"\nprotocol = "hermes"\n')
        with pytest.raises(ConfigError, match=r"tito needs a llama\.cpp llama-server or vLLM endpoint"):
            make_rollout_func(policy="plain", expert="none", config_path=path, scenarios="shopfront*", tasks="0",
                              preflight="off", tito=True)
