"""Preparing a run: resolve worlds, models and arms, and check them before any episode starts."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from awm_runtime._build import BuildContext, assemble_harness
from awm_runtime._config import RunConfig
from awm_runtime._errors import ConfigError
from awm_runtime._interfaces import Sink, StoppingRule
from awm_runtime._log import get_logger
from awm_runtime._prompts import use_prompts
from awm_runtime._types import EpisodeKey, EpisodeSpec, ForkSpec, Task
from awm_runtime._units import Planner, Unit
from awm_runtime.episode import CHECKPOINTS, EpisodeLimits, ExpertBudget, Harness
from awm_runtime.isolation import Containment, require
from awm_runtime.logs import register_secrets
from awm_runtime.models import (
    IN_PROCESS,
    ModelRegistry,
    apply_routes,
    load_registry,
    preflight,
    shutdown,
    start_call_procs,
    start_local_servers,
)
from awm_runtime.scheduler._decide import require_prices
from awm_runtime.scheduler._fit import check_fit
from awm_runtime.scheduler._launch import Launch, settle
from awm_runtime.scheduler._plan import order_tasks, plan_episodes, plan_shuffled, select_tasks, split
from awm_runtime.scheduler._resume import with_stored_models
from awm_runtime.verifiers import Judge
from awm_runtime.worlds import (
    AwmWorld,
    RemoteWorld,
    RunWorld,
    WorldOptions,
    in_flight_by_scenario,
    load_split,
    load_worlds,
    trivial_tasks,
)

log = get_logger("awm_runtime.scheduler")


def remote_options(config: RunConfig) -> dict[str, Any]:
    """The MCP-world settings of a run (RemoteOptions fields); stdio servers log into the run directory."""
    return {"world_env": config.world_env, "scenario_name": config.scenario_name, "log_dir": config.out,
            "reset_tool": config.world_reset_tool, "spares": config.world_spares}


def world_options(config: RunConfig) -> WorldOptions:
    """The world settings of a run."""
    return WorldOptions(verifier=config.verifier, foreign_keys=config.foreign_keys,
                        tool_timeout_s=config.tool_timeout_s, workers=config.world_workers,
                        unsafe_no_sandbox=config.unsafe_no_sandbox, world_disk_mib=config.world_disk_mib,
                        in_flight=config.concurrency, verifier_reuse=config.verifier_reuse)


@dataclass(slots=True)
class PreparedRun:
    """A run resolved and checked, ready to execute: its one config (a resumed run's stored models and the
    chosen run directory filled in), world, tasks, a harness per arm, the model clients, and `launch`: where
    and how it runs (None in a shard or Ray actor, which runs episodes for a parent that holds it)."""

    config: RunConfig
    world: RunWorld
    tasks: list[Task]
    harnesses: dict[str, Harness]
    ctx: BuildContext
    secrets: list[str] = field(default_factory=list)
    planner: Planner | None = None
    containment: Containment = field(default_factory=Containment)
    checkpoint_root: Path | None = None  # where --checkpoint saves (the run directory's checkpoints/)
    # Episodes a killed run left in flight, by key: resumed from their last checkpoint (docs/forks.md).
    resume_from: dict[EpisodeKey, ForkSpec] = field(default_factory=dict)
    launch: Launch | None = None

    async def plan_disk(self) -> None:
        """Size each scenario's disk quota for the episodes of it this run keeps open at once (its planned
        episodes, at most the concurrency). `prepare` and `revise` call it."""
        if isinstance(self.world, AwmWorld) and self.tasks:
            per_task = -(-self.planned // len(self.tasks))
            await self.world.plan_in_flight(in_flight_by_scenario([t.scenario for t in self.tasks], per_task,
                                                                  self.config.concurrency))

    @property
    def planned(self) -> int:
        """How many episodes the run plans (a planner's count for groups and forks)."""
        if self.planner is not None:
            return self.planner.planned
        return len(self.tasks) * len(self.harnesses) * self.config.repeats

    def specs(self) -> Iterator[EpisodeSpec]:
        """Every planned episode (shuffled for `--until-decided`, so a stop leaves a fair sample)."""
        plan = plan_shuffled if self.config.until_decided else plan_episodes
        return plan(self.tasks, self.config.arm_list(), repeats=self.config.repeats, seed=self.config.seed)

    def units(self) -> Iterator[Unit]:
        """The run as units; without groups, every episode is its own unit."""
        return (Unit([spec]) for spec in self.specs())

    def stages(self) -> Iterator[Iterable[Unit]]:
        """Units in stages; without a planner the whole run is one stage."""
        return self.planner.stages() if self.planner is not None else iter([self.units()])

    def remaining(self, done: set[EpisodeKey]) -> int:
        """How many planned episodes `done` lacks."""
        if self.planner is not None:
            return max(0, self.planner.planned - len(done))
        return sum(1 for s in self.specs() if s.key not in done)

    def harness_for(self, spec: EpisodeSpec) -> Harness:
        """The arm's harness; a solo group member runs it without the expert."""
        harness = self.harnesses[spec.arm]
        return harness if spec.with_expert or harness.expert is None else replace(harness, expert=None)


async def prepare(config: RunConfig, *, sinks: Sequence[Sink] = (), stopping: StoppingRule | None = None,
                  planner: Planner | None = None, check: bool = True, shard: tuple[int, int] = (0, 1),
                  local_bases: Mapping[str, str] | None = None) -> PreparedRun:
    """Resolve everything a run needs and check it, so bad input fails before any episode: the one code
    that reads and checks a RunConfig. `run` executes what it returns.

    `sinks` see every episode (one process only); `stopping` is the rule of an `--until-decided` run
    (default: the sequential test at `config.alpha`); `planner` plans the episodes instead (awm-fork).
    A shard passes `check=False` (its parent ran the preflight and holds the run directory),
    `shard=(index, count)`: it gets its part of every endpoint's limits, so the shards together keep to
    what awm.toml allows, and `local_bases`: the local model servers its parent started, by alias, which
    it uses instead of starting its own."""
    if config.resume and check:
        config = _resumed(config)
    registry = load_registry(config.config_path)
    if config.models:  # a resumed run: aliases awm.toml no longer defines run from manifest.json
        registry = with_stored_models(registry, config.models)
    registry = share_limits(apply_routes(registry, config.model_dump()), *shard)
    containment = require(config.unsafe_no_sandbox)  # before any dataset code can run
    if config.prompts is not None:
        use_prompts(config.prompts)
    launch = None
    if check:  # the run directory and the backend: one line now, not after the preflight
        grouped = planner is not None or config.group_size is not None or config.expert_ratio is not None
        config, launch = settle(config, grouped=grouped, sinks=sinks, stopping=stopping)
    world = load_worlds(config.worlds, solutions=config.solutions, options=world_options(config),
                        tasks_file=config.tasks_file, remote=remote_options(config))
    try:
        if isinstance(world, RemoteWorld):
            await world.connect()  # a world that cannot be reached is bad input: one line, before any episode
        prep = await _prepare(config, registry, world, check, local_bases)
        if planner is not None:
            prep.planner = planner
        if launch is not None:
            _launched(prep, launch)
        await prep.plan_disk()
    except BaseException:
        await asyncio.shield(world.aclose())
        await asyncio.shield(shutdown())  # the local model servers a refused run started
        raise
    prep.containment = containment
    return prep


def ready(prep: PreparedRun, *, sinks: Sequence[Sink] = (), stopping: StoppingRule | None = None) -> PreparedRun:
    """Check and launch a PreparedRun built without `prepare` (an embedder's own world and harnesses, a
    test's): the same checks of its config and the same choice of run directory and backend."""
    config, launch = settle(prep.config, grouped=prep.planner is not None, sinks=sinks, stopping=stopping)
    prep.config = config
    _launched(prep, launch)
    return prep


async def revise(prep: PreparedRun, **update: Any) -> PreparedRun:
    """A prepared run with some counts changed (awm-bench sizes `repeats` and `concurrency` to the tasks it
    found): checked and launched again, and its worlds' disk planned again."""
    launch = prep.launch
    prep.config = prep.config.model_copy(update=update)
    ready(prep, sinks=launch.sinks if launch else (), stopping=launch.stopping if launch else None)
    await prep.plan_disk()
    return prep


def _launched(prep: PreparedRun, launch: Launch) -> None:
    """Attach how the run runs, with what follows from it: where --checkpoint saves, and the prices a
    --max-usd budget needs."""
    prep.launch = launch
    if prep.config.checkpoint != "none":
        prep.checkpoint_root = launch.out / CHECKPOINTS
    if launch.stopping is not None and prep.config.max_usd is not None:
        require_prices(prep)


async def _prepare(config: RunConfig, registry: Any, world: RunWorld, check: bool,
                   local_bases: Mapping[str, str] | None) -> PreparedRun:
    split = None if config.split == "all" else load_split(world)[config.split]
    tasks = order_tasks(select_tasks(world.tasks(), scenarios=config.scenarios, task_spec=config.tasks,
                                     split=split), config.seed)
    if not tasks:
        dataset = getattr(world, "dataset", None)
        why = ""
        if dataset is not None and world.problems and not any(sc.runnable for sc in dataset.scenarios.values()):
            from awm_runtime.worlds import where_problems

            why = f": no scenario of it can run: {where_problems(world.problems, dataset.root)}"
        raise ConfigError(f"no tasks match --scenarios {config.scenarios!r} --tasks {config.tasks!r} "
                          f"--split {config.split} in {world.name} ({len(world.tasks())} tasks loaded){why}")
    if config.verifier == "sql" and not config.judge and isinstance(world, AwmWorld):
        raise ConfigError("--verifier sql needs --judge ALIAS: the model that classifies each episode")
    if config.exclude_trivial and not isinstance(world, AwmWorld):
        raise ConfigError(f"--exclude-trivial needs local worlds (builtin or a directory), not {world.name}")
    if config.unverified == "skip" and not isinstance(world, AwmWorld):
        raise ConfigError(f"--unverified skip needs local worlds (builtin, awm-1k or a directory): {world.name} "
                          "holds no verifier code to check")
    if check:  # after the checks of the input, so an error stands alone; the parent says it, its shards do not
        _say_problems(config, world)
    if isinstance(world, AwmWorld):
        tasks = await _unverified(config, world, tasks)
    if config.exclude_trivial and isinstance(world, AwmWorld):
        trivial = await trivial_tasks(world, tasks)
        tasks = [t for t in tasks if t.key not in trivial]
        if not tasks:
            raise ConfigError(f"--exclude-trivial: all {len(trivial)} selected tasks already pass with no actions")
    ctx = BuildContext(registry=registry, world=world, options={"tool_result_chars": config.tool_result_chars,
                                                                "max_argument_bytes": config.max_argument_bytes,
                                                                "judge": config.judge,
                                                                "expert_criteria": config.expert_criteria})
    if config.judge and _judged_here(config, world):
        world.judge = Judge(ctx.client(config.judge, "judge"), name=config.judge)
    elif isinstance(world, RemoteWorld) and world.judged_here:
        log.warning("no_verifier", world=world.name,
                    note="an MCP world has no verifier: without --judge every verdict is no_verifier")
    if check:
        _warn_shared_server(config, world)
    harnesses: dict[str, Harness] = {}
    for arm in config.arm_list():
        c = config.for_arm(arm)
        ctx.options.update(protocol=c.protocol, enable_thinking=c.enable_thinking,
                           reasoning_effort=c.reasoning_effort, thinking_budget=c.thinking_budget)
        harnesses[arm.name] = assemble_harness(
            ctx, c.policy, c.expert, nudges=c.nudges, reward=c.reward,
            limits=EpisodeLimits(
                max_turns=c.max_turns, timeout_s=c.episode_timeout_s, on_format_error=c.on_format_error,
                expert_budget=ExpertBudget(calls=c.expert_calls, tokens=c.expert_tokens, usd=c.expert_usd)),
        )
    if config.judge:
        ctx.client(config.judge, "judge")  # plug-ins that judge use this client; preflight checks it now
    planner = None
    if config.group_size is not None or config.expert_ratio is not None:
        from awm_runtime.groups import GroupPlanner

        planner = GroupPlanner.from_config(config, tasks, harnesses)
    roles = [(role, client.config) for (role, _alias), client in ctx.clients.items()]
    secrets = [s for _, cfg in roles if cfg.api_key_env and (s := os.environ.get(cfg.api_key_env, ""))]
    register_secrets(secrets)  # redacted from tool results, expert text and every run-directory file
    if config.ray:  # a Ray driver runs no episode: its actors check the endpoints and keys on their nodes
        refuse_local_on_ray(ctx)
        return PreparedRun(config, world, tasks, harnesses, ctx, secrets, planner)
    try:
        await _serve_locally(ctx, local_bases)  # keys registered first: a failed start quotes the server's log
        roles = [(role, client.config) for (role, _alias), client in ctx.clients.items()]
        await start_call_procs(config.model_procs, [cfg for _, cfg in roles])
        if check:  # the fit check's probes wait on the model too: they run beside the test completions
            fit = check_fit(world, tasks, harnesses, completions=config.preflight == "full")
            await preflight(roles, mode=config.preflight, alongside=fit)
    except BaseException:
        await shutdown()
        raise
    if any(client.transport is IN_PROCESS for client in ctx.clients.values()):
        # litellm takes seconds to import: do it off the loop now, not inside the first episode's model call.
        from awm_runtime.models._litellm import litellm

        await asyncio.to_thread(litellm)
    return PreparedRun(config, world, tasks, harnesses, ctx, secrets, planner)


def _warn_shared_server(config: RunConfig, world: RunWorld) -> None:
    """Once: an MCP server over HTTP is one server for every episode, so repeats and group members of a task
    may see each other's writes (stdio worlds start a server per episode; OpenEnv worlds reset)."""
    url = getattr(world, "url", None)
    shared = config.repeats > 1 or config.group_size is not None or len(config.arm_list()) > 1
    if url and shared and not config.world_reset_tool:
        log.warning("mcp_shared_server", world=world.name,
                    note="every episode of this run uses the same HTTP server, which awm-run cannot reset: "
                         "repeats, arms and group members of a task may see each other's changes. Use a stdio "
                         "world (a server per episode), or --world-reset-tool NAME if the server has a reset tool "
                         "(docs/mcp.md)")


def _judged_here(config: RunConfig, world: RunWorld) -> bool:
    """Whether our judge decides verdicts: SQL mode on local worlds, and MCP worlds (which have no verifier).
    An OpenEnv world's `verify` decides on the server, in the mode asked for."""
    if isinstance(world, AwmWorld):
        return config.verifier == "sql"
    return world.judged_here


def _resumed(config: RunConfig) -> RunConfig:
    """The config of a resumed session, checked against the run's manifest (nothing is written yet)."""
    from awm_runtime.logs import MANIFEST, read_manifest
    from awm_runtime.scheduler._resume import check_resume

    if config.out is None or not (config.out / MANIFEST).is_file():
        return config  # out_dir() says what is wrong, with the run directory
    try:
        manifest = read_manifest(config.out)
    except (OSError, ValueError):
        return config
    return check_resume(config, manifest)


def _say_problems(config: RunConfig, world: RunWorld) -> None:
    """One warning before the run for what the dataset lacks; `awm-worlds check` lists it all."""
    dataset = getattr(world, "dataset", None)
    if dataset is None or not world.problems:
        return
    idle = sum(not sc.runnable for sc in dataset.scenarios.values())
    log.warning("worlds_problems", problems=len(world.problems), scenarios_that_cannot_run=idle,
                examples=[str(p) for p in world.problems[:3]],
                note=f"whatever can run, runs; `awm-worlds check --worlds {config.worlds}` says why the rest cannot")


async def _unverified(config: RunConfig, world: AwmWorld, tasks: list[Task]) -> list[Task]:
    """`--unverified skip`: leave out the tasks that cannot be verified (their verifier code is read and parsed
    now, off the loop). `run` keeps them; a verifier that does not parse is then found when it is first used."""
    lacking = sum(not t.has_verifier for t in tasks)
    if config.unverified == "run":
        if lacking:
            log.warning("tasks_without_verifier", tasks=lacking, verifier=config.verifier,
                        note="they run unverified (verdict no_verifier); --unverified skip leaves them out")
        return tasks
    problems = await asyncio.to_thread(world.unverified, tasks)
    if problems:
        log.warning("tasks_skipped_unverified", tasks=len(problems), verifier=config.verifier,
                    examples=[f"{s}/{i}: {why}" for (s, i), why in list(problems.items())[:3]])
    kept = [t for t in tasks if t.key not in problems]
    if not kept:
        raise ConfigError(f"--unverified skip: none of the {len(tasks)} selected tasks has a usable "
                          f"{config.verifier}-mode verifier")
    return kept


def refuse_local_on_ray(ctx: BuildContext) -> None:
    """A local alias serves from a llama-server this process starts: on a Ray cluster every actor would
    start its own (one model in memory and half the cores per actor), so --ray refuses it in one line."""
    local = sorted({c.config.alias for c in ctx.clients.values() if c.config.needs_local_server})
    if local:
        raise ConfigError(f"--ray cannot use local models ({', '.join(local)}): each actor would start its own "
                          "llama-server; serve the model once per node yourself and point an alias with "
                          "api_base at it (docs/models.md), or run without --ray")


async def _serve_locally(ctx: BuildContext, given: Mapping[str, str] | None) -> None:
    """Start a server for each local alias the run uses (or take the parent's, in a shard) and bind its clients."""
    local = [c for c in ctx.clients.values() if c.config.needs_local_server]
    if not local:
        return
    bases = dict(given) if given is not None else await start_local_servers(c.config for c in local)
    for client in local:
        base = bases.get(client.config.alias)
        if base is None:
            raise ConfigError(f"local model {client.config.alias!r}: no server was started for it")
        client.bind(base)


def share_limits(registry: ModelRegistry, index: int, count: int) -> ModelRegistry:
    """Shard `index` of `count`: its part of every alias's concurrency and rate limits (at least 1 each)."""
    if count <= 1:
        return registry

    def part(limit: int | None) -> int | None:
        return None if limit is None else max(1, split(limit, count)[index])

    for alias in registry.names():
        c = registry.get(alias)
        registry = registry.with_overrides(alias, max_concurrency=part(c.max_concurrency), rpm=part(c.rpm),
                                           tpm=part(c.tpm))
    return registry
