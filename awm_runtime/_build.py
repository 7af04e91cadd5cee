"""Turn names into plug-ins: policies, experts, nudge rules and reward shapers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from awm_runtime._errors import ConfigError
from awm_runtime._interfaces import Expert, NudgeRule, Policy, RewardShaper
from awm_runtime._plugins import available, resolve
from awm_runtime._types import ModelRole, Task
from awm_runtime.models import ModelClient, ModelRegistry

if TYPE_CHECKING:
    from awm_runtime.episode import EpisodeLimits, Harness
    from awm_runtime.worlds import RunWorld, Solution


@dataclass(slots=True)
class BuildContext:
    """What a plug-in factory may use. One model client per (role, alias): roles never share one."""

    registry: ModelRegistry
    world: RunWorld | None = None
    options: dict[str, Any] = field(default_factory=dict)
    clients: dict[tuple[ModelRole, str], ModelClient] = field(default_factory=dict)
    _taught: bool = False

    def client(self, alias: str, role: ModelRole) -> ModelClient:
        key = (role, alias)
        if key not in self.clients:
            config = self.registry.resolve(alias, role)
            self.clients[key] = ModelClient(config, role)
            if config.simulated:
                self.teach_simulations()
        return self.clients[key]

    def solution(self, task: Task) -> Solution | None:
        return self.world.solution(task) if self.world is not None else None

    def teach_simulations(self) -> None:
        """Give the simulated models the reference solutions of the loaded worlds."""
        if self._taught or self.world is None:
            return
        from awm_runtime.models.sim import KnownTask, teach

        teach(KnownTask(t.scenario, t.task_idx, t.text, sol.steps, sol.final_answer)
              for t in self.world.tasks() if (sol := self.world.solution(t)) is not None)
        self._taught = True


def _split(name: str) -> tuple[str, str]:
    plugin, _, arg = name.partition(":")
    return plugin, arg


def build_policy(name: str, ctx: BuildContext) -> Policy:
    """A policy plug-in by name (`human`, `replay:RUN`), else a model alias for the chat policy."""
    plugin, arg = _split(name)
    if plugin != "chat" and plugin in available("policies"):
        return resolve("policies", plugin)(arg, ctx)
    return resolve("policies", "chat")(name, ctx)


def build_expert(name: str, ctx: BuildContext) -> Expert | None:
    """`none` disables; an expert plug-in by name (`oracle`, `human`), else a model alias (LLM expert)."""
    if name in ("", "none"):
        return None
    plugin, arg = _split(name)
    if plugin != "llm" and plugin in available("experts"):
        return resolve("experts", plugin)(arg, ctx)
    return resolve("experts", "llm")(name, ctx)


def build_nudges(names: tuple[str, ...]) -> list[NudgeRule]:
    rules = []
    for name in names:
        plugin, arg = _split(name)
        try:
            rules.append(resolve("nudges", plugin)(arg))
        except ValueError as exc:
            raise ConfigError(f"nudge rule {name!r}: {exc}") from None
    return rules


def build_shaper(name: str) -> RewardShaper:
    plugin, arg = _split(name)
    try:
        return resolve("rewards", plugin)(arg)
    except ValueError as exc:
        raise ConfigError(f"reward shaper {name!r}: {exc}") from None


def build_harness(policy: str, expert: str = "none", *, world: RunWorld | None = None, reward: str = "awm",
                  nudges: tuple[str, ...] = ("on_error", "on_stall:5"), limits: EpisodeLimits | None = None,
                  registry: ModelRegistry | None = None) -> Harness:
    """A Harness from names, as awm-run builds one: for apps that embed `run_episode`."""
    from awm_runtime.models import load_registry

    ctx = BuildContext(registry=registry or load_registry(), world=world)
    return assemble_harness(ctx, policy, expert, reward=reward, nudges=nudges, limits=limits)


def assemble_harness(ctx: BuildContext, policy: str, expert: str, *, reward: str, nudges: tuple[str, ...],
                     limits: EpisodeLimits | None) -> Harness:
    """The one place a Harness is put together from names (build_harness, and each arm of a prepared run)."""
    from awm_runtime.episode import EpisodeLimits, Harness

    return Harness(policy=build_policy(policy, ctx), expert=build_expert(expert, ctx), nudges=build_nudges(nudges),
                   shaper=build_shaper(reward), limits=limits or EpisodeLimits())
