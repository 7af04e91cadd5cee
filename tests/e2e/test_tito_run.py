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
