"""Before any episode: does each world's first prompt fit the policy model's context window, and does a
native-protocol policy's server let the tools reach the model? One line per problem, as a ConfigError.

Real servers fail both quietly or late: a prompt over the window is a 400 on every episode's first
call, and a chat template without tool support drops `tools` and answers anyway (llama.cpp), so the
model never sees a tool. Both are facts about the setup, so they are refused before the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import httpx

from awm_runtime._errors import ConfigError, WorldError
from awm_runtime._types import Task
from awm_runtime.episode import Harness, offered_tools
from awm_runtime.models import Count, ModelConfig, ServerFacts, count_prompt, read_facts, tools_problem
from awm_runtime.policies import ChatPolicy
from awm_runtime.worlds import AwmWorld, RunWorld

MAX_LINES = 10  # problem lines shown; the rest are counted
_WORLDS_AT_ONCE = 8
_HTTP_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class _Use:
    """One arm's chat policy on a real model."""

    arm: str
    harness: Harness
    policy: ChatPolicy

    @property
    def config(self) -> ModelConfig:
        return self.policy.client.config


def _real_chat_policies(harnesses: Mapping[str, Harness]) -> list[_Use]:
    return [_Use(arm, h, h.policy) for arm, h in harnesses.items()
            if isinstance(h.policy, ChatPolicy) and not h.policy.client.config.simulated]


def _longest_task_per_scenario(tasks: Sequence[Task]) -> dict[str, Task]:
    """The first prompt differs between a scenario's tasks only in the task text: the longest is the worst."""
    out: dict[str, Task] = {}
    for task in tasks:
        if task.scenario not in out or len(task.text) > len(out[task.scenario].text):
            out[task.scenario] = task
    return out


async def check_fit(world: RunWorld, tasks: Sequence[Task], harnesses: Mapping[str, Harness], *,
                    completions: bool) -> None:
    """Refuse the run (ConfigError) if a world's first prompt cannot fit a policy's context window, or a
    native-protocol policy's tools would not reach its model. `completions`: the native probe may send two
    one-token completions where the server has no template metadata (preflight `full`).

    Only local worlds are fitted: a remote world names its tools when an episode opens a session, and a
    probe session would be an episode on someone else's server. The native check holds for every world."""
    uses = _real_chat_policies(harnesses)
    if not uses:
        return
    problems: list[str] = []
    worst = _longest_task_per_scenario(tasks)
    async with httpx.AsyncClient(timeout=_HTTP_TIMEOUT_S) as client:
        facts: dict[tuple[str, str | None], ServerFacts] = {}
        probed: dict[tuple[str, str | None], str | None] = {}
        counted: dict[tuple[object, ...], Count] = {}
        for use in uses:
            cfg = use.config
            key = (cfg.alias, cfg.api_base)
            if key not in facts:
                facts[key] = await read_facts(cfg, client)
            if use.policy.protocol == "native":
                if key not in probed:
                    probed[key] = await tools_problem(cfg, facts[key], client, completions=completions)
                if probed[key]:
                    problems.append(f"arm {use.arm!r}: policy {cfg.alias!r} speaks protocol native, but {probed[key]}, "
                                    f"so the model would never see a tool; use protocol = \"hermes\" "
                                    f"(awm.toml, or --protocol hermes)")
                    continue
            if facts[key].window is not None and isinstance(world, AwmWorld):
                problems.extend(await _fit_worlds(use, facts[key], world, worst, client, counted))
    if problems:
        shown = problems[:MAX_LINES]
        if len(problems) > MAX_LINES:
            shown.append(f"… and {len(problems) - MAX_LINES} more worlds that do not fit")
        raise ConfigError("\n".join(shown))


async def _fit_worlds(use: _Use, facts: ServerFacts, world: AwmWorld, worst: Mapping[str, Task],
                      client: httpx.AsyncClient, counted: dict[tuple[object, ...], Count]) -> list[str]:
    cfg, speaker = use.config, use.policy.speaker
    window = facts.window
    assert window is not None
    reply = int(cfg.params.get("max_tokens") or cfg.params.get("max_completion_tokens") or 0)
    gate = asyncio.Semaphore(_WORLDS_AT_ONCE)

    async def one(scenario: str, task: Task) -> str | None:
        async with gate:
            try:
                world_tools = (await world.prepare(scenario)).tools
            except WorldError:
                return None  # a scenario that cannot load is reported by the run itself, per episode
            tools = offered_tools(use.harness, world_tools)
            key = (cfg.alias, cfg.api_base, speaker.name, scenario, len(tools), task.text)
            if key not in counted:
                messages = speaker.wire(use.policy.begin(task, tools))
                counted[key] = await count_prompt(cfg, facts, messages, speaker.native_tools(tools), client)
        count = counted[key]
        if count.tokens + reply <= window:
            return None
        how = "counted by the server's tokenizer" if count.exact else "estimated at 4 characters a token"
        room = f" plus max_tokens {reply}" if reply else ""
        return (f"world {scenario!r}: the first {speaker.name} prompt of arm {use.arm!r} is {count.tokens:,} tokens "
                f"({how}){room}, over the {window:,}-token context window of {cfg.alias!r} ({facts.window_from}); "
                f"offer fewer tools, use a model with a larger window, or lower max_tokens")

    lines = await asyncio.gather(*(one(s, t) for s, t in sorted(worst.items())))
    return [line for line in lines if line]
