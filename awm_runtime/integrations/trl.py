"""TRL's GRPOTrainer fed by this runtime: a `rollout_func` that plays each prompt's episode here.

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from awm_runtime.integrations.trl import env_reward, make_rollout_func

    rollouts = make_rollout_func(policy="qwen3-4b", expert="gpt-5.1", reward="try-first", expert_ratio="0.5")
    trainer = GRPOTrainer(model=..., reward_funcs=env_reward, rollout_func=rollouts,
                          train_dataset=Dataset.from_list(rollouts.rows()), args=GRPOConfig(num_generations=8))

Each prompt row names a task (its `scenario` / `task_idx`, or the task text of its user message). The
trainer hands over each prompt `num_generations` times in a row; that run of identical prompts is a
GRPO group, and `expert_ratio` of its members get the expert (`adaptive`: the training wheels, from
the last batch's format-error rate). Every member is a full episode of the engine — policy, world,
expert, nudges, verifier, reward shaper — and comes back as TRL wants it: `prompt_ids` and
`completion_ids` of the whole multi-turn episode (`integrations._sequence`), the sampling `logprobs`,
`env_mask` (1 on the policy's generated tokens, 0 on tool results, expert advice, nudges and template
markers), and `env_reward` plus the reward components, outcome and counters as extra columns.

Token ids come from the serving engine (`_engine_tokens`): vLLM's `prompt_token_ids` / `token_ids`,
or llama.cpp's logprob ids with its `/apply-template` and `/tokenize`. Nothing is re-tokenised here.

The event loop: the runtime is asyncio (world worker pools, the verifier fork server, HTTP sessions
and endpoint limiters all belong to one loop), while TRL calls `rollout_func` synchronously from its
training loop. The episodes run on one background event loop in a daemon thread that lives as long
as the rollout function: the world's worker processes and connections stay warm across GRPO steps
(an `asyncio.run` per batch would rebuild them every step), and a caller that already runs a loop
(a notebook) is not in the way. Each call blocks until its batch is played, or `timeout_s` passes.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from awm_runtime._config import RunConfig
from awm_runtime._errors import ConfigError
from awm_runtime._prompts import render
from awm_runtime._seeds import episode_seed
from awm_runtime._types import EpisodeRecord, EpisodeSpec, GroupInfo, Message, Task
from awm_runtime.groups import FIRST_PHASE, group_advantages, had_format_error, parse_ratio, phase_for, phase_members
from awm_runtime.integrations._engine_tokens import LlamaCppTokens
from awm_runtime.integrations._sequence import TokenSequence, Turn, assemble
from awm_runtime.models import ModelConfig
from awm_runtime.models._registry import _validated

__all__ = ["Rollouts", "env_reward", "make_rollout_func"]


def env_reward(completions: Sequence[Any], env_reward: Sequence[float], **_: Any) -> list[float | None]:
    """A TRL reward function: the reward the runtime's shaper gave each episode (TRL's type allows None)."""
    return [float(r) for r in env_reward]


def make_rollout_func(config: RunConfig | None = None, *, expert_ratio: str = "0.5", out: Path | None = None,
                      timeout_s: float = 3600.0, tito: bool | None = None, **fields: Any) -> Rollouts:
    """A `rollout_func(prompts, trainer) -> dict` for GRPOTrainer. `fields` are RunConfig fields (policy,
    expert, worlds, reward, nudges, max_turns, scenarios, tasks, split, config_path, concurrency, ...);
    `out`, when given, receives every rollout as a run directory (episodes.jsonl, tools.jsonl). `tito`
    (None: as the policy alias says) plays the policy token in, token out (models/_tito.py)."""
    return Rollouts(config or RunConfig(**fields), expert_ratio=expert_ratio, out=out, timeout_s=timeout_s,
                    tito=tito)


class Rollouts:
    """The rollout function: call it as TRL does, `close()` it when training ends."""

    def __init__(self, config: RunConfig, *, expert_ratio: str = "0.5", out: Path | None = None,
                 timeout_s: float = 3600.0, tito: bool | None = None) -> None:
        parse_ratio(expert_ratio, 8)  # a bad spec fails here, before the world loads
        self.config, self.expert_ratio, self.timeout_s = config, expert_ratio, timeout_s
        self.tito = tito
        self.phase = FIRST_PHASE
        self.batches = 0
        self.run_id = uuid.uuid4().hex
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="awm-rollouts", daemon=True)
        self._thread.start()
        self._writer: Any = None
        try:
            self._run(self._start(out))
        except BaseException:
            self.close()
            raise

    # -- the loop thread --------------------------------------------------------------------------------

    def _run(self, coro: Any) -> Any:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(self.timeout_s)
        except BaseException:  # a timeout, or Ctrl-C in the trainer's thread: the batch's episodes stop too
            future.cancel()
            raise

    async def _start(self, out: Path | None) -> None:
        from awm_runtime.logs import RunDirWriter
        from awm_runtime.policies import ChatPolicy
        from awm_runtime.scheduler import EpisodePool, RunControl, prepare

        if len(self.config.arm_list()) != 1:
            raise ConfigError("rollouts play one arm: drop --arm (the expert/solo mix is expert_ratio)")
        self.prep = await prepare(self.config)
        self.arm = self.config.arm_list()[0].name
        harness = self.prep.harnesses[self.arm]
        if not isinstance(harness.policy, ChatPolicy) or harness.policy.client.config.simulated:
            raise ConfigError(f"rollouts need a real model policy served by vLLM or llama.cpp, not "
                              f"{self.config.policy!r}: the trainer needs the engine's token ids")
        self.policy = harness.policy
        client = self.policy.client
        update: dict[str, Any] = {"logprobs": True}  # token data on every reply
        if self.tito is not None and self.tito != client.config.tito:
            update["tito"] = self.tito
            client._transport = None  # resolved again at the first call, for the config below
        # validated again: tito needs a text protocol (hermes or awm)
        client.config = _validated(client.config.alias, {**client.config.model_dump(), **update}, "rollouts")
        if client.config.tito:
            await check_tito(client.config)
        self.llama: LlamaCppTokens | None = None
        if not client.config.model.startswith("hosted_vllm/"):  # vLLM sends the prompt's ids with each reply
            if not client.config.api_base:
                raise ConfigError(f"policy {self.config.policy!r} has no api_base: rollouts need a vLLM or "
                                  "llama.cpp server's token ids")
            self.llama = LlamaCppTokens(client.config.api_base)
            await self.llama.check()
        self.pool = EpisodePool(self.prep, run_id=self.run_id, sinks=[], concurrency=self.config.concurrency,
                                control=RunControl(self.config.grace_s))
        self._slots = asyncio.Semaphore(self.config.concurrency)
        if out is not None:
            self._writer = RunDirWriter(Path(out))
        self._index: dict[str, list[Task]] = {}
        for t in self.prep.tasks:
            for text in {t.text, render("task.md", task=t.text)}:
                self._index.setdefault(text.strip(), []).append(t)

    # -- prompts ----------------------------------------------------------------------------------------

    def rows(self) -> list[dict[str, Any]]:
        """A prompt-only dataset for GRPOTrainer: one row per selected task."""
        return [{"prompt": [{"role": "user", "content": render("task.md", task=t.text)}],
                 "scenario": t.scenario, "task_idx": t.task_idx} for t in self.prep.tasks]

    def task_for(self, prompt: Any) -> Task:
        """The task a prompt row names: by the text of its last user message (our rows and awm-export's)."""
        if isinstance(prompt, str):
            text, system = prompt, ""
        else:
            text = next((m.get("content") or "" for m in reversed(prompt) if m.get("role") == "user"), "")
            system = next((m.get("content") or "" for m in prompt if m.get("role") == "system"), "")
        found = self._index.get(str(text).strip(), [])
        if len(found) > 1:  # the same task text in two scenarios: the system prompt names the application
            found = [t for t in found if (t.scenario_title or t.scenario) in system] or found
        if len(found) != 1:
            what = "matches no selected task" if not found else f"matches {len(found)} tasks"
            raise ConfigError(f"prompt {str(text)[:80]!r} {what}; build the dataset with rollouts.rows() or "
                              "awm-export --format grpo from a run of the same worlds")
        return found[0]

    # -- a batch ----------------------------------------------------------------------------------------

    def __call__(self, prompts: list[Any], trainer: Any = None) -> dict[str, list[Any]]:
        tasks = [self.task_for(p) for p in prompts]
        eos = _eos_id(trainer)
        result: dict[str, list[Any]] = self._run(self._batch(tasks, eos))
        return result

    def _specs(self, tasks: list[Task]) -> list[EpisodeSpec]:
        """Runs of the same task are GRPO groups; the first members of each get the expert."""
        specs: list[EpisodeSpec] = []
        i = 0
        while i < len(tasks):
            j = i
            while j < len(tasks) and tasks[j].key == tasks[i].key:
                j += 1
            size = j - i
            ratio = parse_ratio(self.expert_ratio, size)
            experts = phase_members(self.phase, size) if ratio.adaptive else int(ratio.fixed or 0)
            gid = f"{self.run_id[:8]}-{self.batches}-{len(specs)}"
            for k in range(size):
                specs.append(EpisodeSpec(arm=self.arm, scenario=tasks[i].scenario, task_idx=tasks[i].task_idx,
                                         repeat=self.batches * 100_000 + i + k, group_id=gid, with_expert=k < experts,
                                         seed=episode_seed(self.config.seed, f"batch-{self.batches}", i, k)))
            i = j
        return specs

    async def _episode(self, spec: EpisodeSpec) -> EpisodeRecord:
        async with self._slots:
            return await self.pool.one(spec)

    async def _batch(self, tasks: list[Task], eos: int) -> dict[str, list[Any]]:
        specs = self._specs(tasks)
        records = list(await asyncio.gather(*(self._episode(s) for s in specs)))
        self._finish_groups(specs, records)
        sequences = await asyncio.gather(*(self._sequence(r) for r in records))
        if self._writer is not None:
            await asyncio.to_thread(self._write, records)
        self.batches += 1
        rate = sum(had_format_error({"outcome": r.outcome, "format_errors": r.format_errors})
                   for r in records) / max(1, len(records))
        self.phase = phase_for(rate)
        out: dict[str, list[Any]] = {k: [] for k in (
            "prompt_ids", "completion_ids", "logprobs", "env_mask", "env_reward", "reward_components", "outcome",
            "with_expert", "expert_calls", "format_errors", "turns", "turns_dropped", "tokens_reread", "episode_id")}
        for spec, record, seq in zip(specs, records, sequences, strict=True):
            if seq is None:  # no usable policy turn (e.g. the world failed to open): one masked token
                seq = TokenSequence(prompt_ids=[eos], completion_ids=[eos], logprobs=[0.0], env_mask=[0])
            out["prompt_ids"].append(seq.prompt_ids)
            out["completion_ids"].append(seq.completion_ids)
            out["logprobs"].append(seq.logprobs)
            out["env_mask"].append(seq.env_mask)
            out["env_reward"].append(float(record.reward))
            out["reward_components"].append(dict(record.reward_components))
            out["outcome"].append(record.outcome)
            out["with_expert"].append(spec.with_expert)
            out["expert_calls"].append(record.expert_calls)
            out["format_errors"].append(sum(n for k, n in record.format_errors.items() if k != "multiple_calls"))
            out["turns"].append(seq.turns_used)
            out["turns_dropped"].append(seq.turns_dropped)
            out["tokens_reread"].append(seq.tokens_reread)
            out["episode_id"].append(record.episode_id)
        if not all(s is None or s.sampled_logprobs for s in sequences):
            out["logprobs"] = None  # type: ignore[assignment]  # TRL: no importance-sampling correction
        return out

    def _finish_groups(self, specs: list[EpisodeSpec], records: list[EpisodeRecord]) -> None:
        """Group info and advantages on the records (TRL computes its own; these are for the run directory)."""
        groups: dict[str, list[int]] = {}
        for i, s in enumerate(specs):
            groups.setdefault(s.group_id or "", []).append(i)
        for members in groups.values():
            experts = sum(specs[i].with_expert for i in members)
            for i, adv in zip(members, group_advantages([records[i].reward for i in members]), strict=True):
                records[i].advantage = adv
                records[i].group = GroupInfo(step=self.batches, size=len(members), expert_members=experts,
                                             with_expert=specs[i].with_expert, phase=self.phase)

    def _write(self, records: list[EpisodeRecord]) -> None:
        from awm_runtime.logs import new_tool_sets, record_line

        self._writer.add_tools(new_tool_sets(records, set()))  # the writer skips the sets it has written already
        self._writer.append(b"".join(record_line(r) for r in records))

    async def _sequence(self, record: EpisodeRecord) -> TokenSequence | None:
        """The episode's tokens: one Turn per policy reply that came with the engine's token ids."""
        turns: list[Turn] = []
        params = {**self.policy.client.config.params, **self.policy.request_params(0)}  # as the calls were sent
        for k, m in enumerate(record.messages):
            if m.source != "policy":
                continue
            if not m.token_ids:
                break  # a reply without ids (none can follow it in one sequence)
            prompt_ids = m.prompt_token_ids or await self._prompt_ids(record.messages[:k], record.tools, params)
            turns.append(Turn(prompt_ids, list(m.token_ids), _floats(m.logprobs, len(m.token_ids))))
        return assemble(turns) if turns else None

    async def _prompt_ids(self, messages: list[Message], tools: list[dict[str, Any]] | None,
                          params: dict[str, Any]) -> list[int]:
        if self.llama is None:
            raise ConfigError("the vLLM policy returned no prompt_token_ids: serve it with vLLM >= 0.10.2")
        native = tools if self.policy.protocol == "native" else None
        return await self.llama.prompt_ids(self.policy.speaker.wire(messages, self.policy.client.config.model),
                                            native, params)

    # -- the end ------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the world's workers, local servers and the loop thread. Safe to call twice."""
        if not self._loop.is_running():
            return
        try:
            self._run(self._stop())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            if not self._thread.is_alive():
                self._loop.close()

    async def _stop(self) -> None:
        from awm_runtime.models import shutdown

        if getattr(self, "llama", None) is not None:
            await self.llama.aclose()  # type: ignore[union-attr]
        if getattr(self, "prep", None) is not None:
            await self.prep.world.aclose()
        await shutdown()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        # What libraries left running on this loop (litellm's logging worker) ends with it, not after it.
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in others:
            t.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    def __enter__(self) -> Rollouts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def check_tito(config: ModelConfig) -> None:
    """One line, before any episode, when the policy's engine cannot take token-id prompts."""
    from awm_runtime.models import engine_kind

    key = os.environ.get(config.api_key_env or "", "") or None
    if not config.api_base or not await engine_kind(config.api_base, config.model, key):
        raise ConfigError(f"policy {config.alias!r}: tito needs a llama.cpp llama-server or vLLM endpoint that takes "
                          f"token-id prompts, and {config.api_base or config.model} is neither (a hosted API cannot)")


def _floats(logprobs: list[Any] | None, n: int) -> list[float] | None:
    if not logprobs or len(logprobs) != n:
        return None
    try:
        return [float(x) for x in logprobs]
    except (TypeError, ValueError):
        return None


def _eos_id(trainer: Any) -> int:
    """The trainer tokenizer's end-of-sequence id, for the one masked token of an episode with no reply."""
    tok = getattr(trainer, "processing_class", None)
    tok = getattr(tok, "tokenizer", tok)
    eos = getattr(tok, "eos_token_id", None)
    return int(eos) if isinstance(eos, int) else 0
