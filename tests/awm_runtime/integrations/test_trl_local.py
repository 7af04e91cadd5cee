"""The TRL rollout function on the real local model: llama.cpp's llama-server serving SmolLM2-135M-Instruct.

The runtime starts the server itself (`local/smollm2`, the [local] extra). The ids come from the server
(its logprob ids, its /apply-template and /tokenize), and they must decode back, through its /detokenize,
to the transcript the episode recorded; env_mask is 1 exactly on the tokens the model generated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import Message
from awm_runtime.integrations.trl import Rollouts, make_rollout_func
from awm_runtime.logs import iter_records
from tests.conftest import require_local_extra

TINY_WORLD = Path(__file__).parents[3] / "examples" / "tiny_world"


@pytest.fixture
def rollouts(tmp_path: Path) -> Iterator[tuple[Rollouts, Path]]:
    """Function-scoped: the server belongs to the rollouts' loop and stops with it, before the test's own
    model-session cleanup (tests/conftest.py) runs on pytest's loop."""
    require_local_extra()
    out = tmp_path / "run"
    # local/smollm2's own sampling, its replies capped at 96 tokens instead of 256: SmolLM2's replies that end by
    # themselves are shorter, and decoding the rest to 256 was most of this test's CPU (the ids, the mask and the
    # decoded transcript are checked the same on a cut reply).
    config = tmp_path / "awm.toml"
    config.write_text('[models."local/smollm2"]\nparams = { temperature = 0.2, top_p = 0.9, max_tokens = 96 }\n')
    with make_rollout_func(policy="local/smollm2", expert="sim/oracle", config_path=config, worlds=str(TINY_WORLD),
                           tasks="0-1", max_turns=3, preflight="quick", reward="try-first", concurrency=2,
                           out=out) as r:
        yield r, out


def server(r: Rollouts, coro: Any) -> Any:
    return asyncio.run_coroutine_threadsafe(coro, r._loop).result(120)


def runs(ids: list[int], mask: list[int], value: int) -> list[list[int]]:
    out: list[list[int]] = []
    for i, (t, m) in enumerate(zip(ids, mask, strict=True)):
        if m == value:
            if i == 0 or mask[i - 1] != value:
                out.append([])
            out[-1].append(t)
    return out


def test_ids_decode_to_the_transcript_and_env_mask_is_the_models_tokens(rollouts: tuple[Rollouts, Path]) -> None:
    r, out_dir = rollouts
    llama = r.llama
    assert llama is not None, "a llama-server policy reads its prompt ids from the server"
    prompt = r.rows()[0]["prompt"]
    out = r([prompt, prompt], None)
    records = {rec["episode_id"]: rec for rec in iter_records(out_dir)}
    assert out["with_expert"] == [True, False] and out["logprobs"] is not None
    for i, eid in enumerate(out["episode_id"]):
        record = records[eid]
        replies = [m for m in record["messages"] if m["source"] == "policy"]
        assert replies and all(m["token_ids"] for m in replies), "the server gave no token ids"
        assert out["turns"][i] == len(replies) and out["turns_dropped"][i] == 0
        prompt_ids, completion, mask = out["prompt_ids"][i], out["completion_ids"][i], out["env_mask"][i]
        ids = prompt_ids + completion
        full_mask = [0] * len(prompt_ids) + mask
        # the generated runs are the replies' ids, in order: mask 1 on nothing else (a tail the server read
        # back as other tokens is replaced by its tokens, masked 0, and counted in tokens_reread)
        generated = runs(ids, full_mask, 1)
        assert len(generated) == len(replies) and len(out["logprobs"][i]) == len(completion)
        for got, m in zip(generated, replies, strict=True):
            assert got == m["token_ids"][:len(got)]
        assert sum(len(m["token_ids"]) for m in replies) - sum(map(len, generated)) == out["tokens_reread"][i]
        if out["tokens_reread"][i] == 0:
            assert [lp for lp, m in zip(out["logprobs"][i], mask, strict=True) if m] == \
                [x for m in replies for x in m["logprobs"]]
        # the whole sequence is the last turn's prompt, as the server renders and tokenises it, then its reply
        messages = [Message(**{k: v for k, v in m.items() if k in Message.model_fields}) for m in record["messages"]]
        last = max(k for k, m in enumerate(messages) if m.source == "policy")
        wire = r.policy.speaker.wire(messages[:last])
        last_prompt = server(r, llama.prompt_ids(wire, None, r.policy.request_params(0)))
        assert ids == last_prompt + replies[-1]["token_ids"]
        text = server(r, llama.detokenize(ids))
        for m in record["messages"][:last + 1]:
            assert (m["content"] or "").strip() in text  # every message, policy or not, is in the sequence
        masked = "".join(server(r, llama.detokenize(run)) for run in runs(ids, full_mask, 0))
        for m in record["messages"][:last]:
            if m["source"] != "policy" and m["content"]:
                assert m["content"].strip() in masked  # world, expert, nudge and system text: all mask 0
