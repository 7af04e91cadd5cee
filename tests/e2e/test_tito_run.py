"""awm-run with a `tito = true` policy on a loopback engine speaking vLLM's token fields, then awm-export.

The run directory is how a user checks a tito run: `awm-export --format grpo` rollout rows carry each
reply's `prompt_delta_ids` and `token_ids`, which in order are the exact sequence the engine was sent.
"""

from __future__ import annotations

import json
from pathlib import Path

from awm_runtime.testing import ChatML, ChatMLEngine, FakeOpenAI, sim_responder, teach_builtin
from tests.e2e.conftest import awm_command
from tests.e2e.test_awm_run import awm_run, records

KEY = "loop-key-tito-e2e-01"


def test_a_tito_run_records_the_exact_sequence_and_grpo_rows_carry_it(tmp_path: Path) -> None:
    teach_builtin()
    config = tmp_path / "awm.toml"
    with FakeOpenAI(key=KEY, models=("loop-model",), token_engine=ChatMLEngine(), max_model_len=1 << 20,
                    max_lifetime_s=300, responder=sim_responder("novice", {"give_up_rate": 0.0})) as server:
        config.write_text(f'[models.loop-tito]\nmodel = "hosted_vllm/loop-model"\napi_base = "{server.url}"\n'
                          f'api_key_env = "LOOP_KEY"\nprotocol = "hermes"\ntito = true\n')
        out = tmp_path / "run"
        proc = awm_run("--config", str(config), "--policy", "loop-tito", "--expert", "none", "--scenarios",
                       "shopfront*", "--tasks", "0", "--group-size", "2", "--out", str(out), "--quiet",
                       env={"LOOP_KEY": KEY})
        assert proc.returncode == 0, proc.stderr[-2000:]
        sent = [b["prompt"] for b in server.completions]
    recs = records(out)
    assert len(recs) == 2 and all(r["outcome"] != "error" for r in recs)
    exported = awm_command("export", str(out), "--format", "grpo", "--out", str(tmp_path / "grpo.jsonl"))
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in (tmp_path / "grpo.rollouts.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    for row in rows:
        replies = [m for m in row["completion"] if m["role"] == "assistant"]
        assert replies and all(m["prompt_delta_ids"] is not None and m["token_ids"] for m in replies)
        sequence: list[int] = []
        for m in replies:
            sequence += m["prompt_delta_ids"]
            assert sequence in sent  # each request was exactly the sequence so far
            sequence += m["token_ids"]
        text = ChatML.decode(sequence)
        assert text.startswith(ChatML.render(row["prompt"], generation_prompt=False))
        cursor = 0
        for m in row["completion"]:
            found = text.find(m["content"] or "", cursor)
            assert found >= 0
            cursor = found


def test_a_template_that_drops_earlier_thinking_cannot_lose_it_with_tito(tmp_path: Path) -> None:
    """Qwen3's template renders an earlier assistant turn without its <think> block. With tito the prompt is the
    sequence the engine generated, extended by template deltas, never a re-render: every turn's thinking stays in
    every later prompt, as sampled (issue 46)."""
    import re
    from typing import Any

    from awm_runtime.testing import Reply
    from awm_runtime.testing._tokens import tokenize_body

    class DropsEarlierThinking(ChatMLEngine):
        def tokenize(self, body: dict[str, Any], max_model_len: int) -> dict[str, Any]:
            messages = body.get("messages")
            if messages:
                last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
                body = {**body, "messages": [
                    {**m, "content": re.sub(r"<think>.*?</think>", "", m.get("content") or "", flags=re.S)}
                    if m["role"] == "assistant" and i != last else m for i, m in enumerate(messages)]}
            return tokenize_body(body, max_model_len)

    teach_builtin()
    novice = sim_responder("novice", {"give_up_rate": 0.0, "wrong_call_rate": 0.7})
    turns = [0]

    def thinks(request: dict[str, Any]) -> Reply:
        reply = novice(request)
        turns[0] += 1
        reply.content = f"<think>plan {turns[0]}</think>{reply.content or ''}"
        return reply

    config = tmp_path / "awm.toml"
    with FakeOpenAI(key=KEY, models=("loop-model",), token_engine=DropsEarlierThinking(), max_model_len=1 << 20,
                    max_lifetime_s=300, responder=thinks) as server:
        config.write_text(f'[models.loop-tito]\nmodel = "hosted_vllm/loop-model"\napi_base = "{server.url}"\n'
                          f'api_key_env = "LOOP_KEY"\nprotocol = "hermes"\ntito = true\n')
        out = tmp_path / "run"
        proc = awm_run("--config", str(config), "--policy", "loop-tito", "--expert", "none", "--scenarios",
                       "shopfront*", "--tasks", "0", "--out", str(out), "--quiet", env={"LOOP_KEY": KEY})
        assert proc.returncode == 0, proc.stderr[-2000:]
        prompts = [ChatML.decode(b["prompt"]) for b in server.completions]
    prompts = [p for p in prompts if "Reply with OK." not in p]  # the preflight's test completion
    assert len(prompts) >= 3
    first = int(re.findall(r"<think>plan (\d+)</think>", prompts[1])[0])
    for k, prompt in enumerate(prompts):  # request k+1 holds the thinking of every earlier reply, in order
        assert re.findall(r"<think>plan (\d+)</think>", prompt) == [str(first + i) for i in range(k)]
    # a re-render through this template would have lost them: what tito does not do
    assert "<think>" not in ChatML.decode(DropsEarlierThinking().tokenize(
        {"messages": [{"role": "assistant", "content": "<think>x</think>a"}, {"role": "user", "content": "u"},
                      {"role": "assistant", "content": "b"}]}, 1 << 20)["tokens"])
