"""floors: each cost per call beside its floor measured in the same run, and their ratio.

Absolute times do not carry between machines; a cost over its floor, both measured in one process on one
machine at one moment, does. Four costs, each in CPU microseconds (process CPU time, never wall):

- tool call: `AwmSession.call_tool` (this process + the world worker) / the scenario's app in this process;
- verification: `AwmSession.verify` (this process + the verifier server and its fork) / the verifier function;
- model call: `ModelClient.complete` (this process) / a bare aiohttp POST of the same body and an orjson parse;
- episode: `run_episode` of a scripted episode (4 model calls, 3 tool calls, a verification, its reset and
  record) / the sum of those floors.

Each is measured `--repeats` times, cost and floor in turns of `BLOCK` calls (so that both take the same share of
a shared machine's drift); the figures are medians over the repeats.
The floors are defined in bench/_floor_parts.py; docs/runs.md says why each is the honest one.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from awm_runtime.bench._floor_parts import (
    AppFloor,
    BareModel,
    Side,
    VerifierFloor,
    burn,
    interleaved_us,
    model_request,
    per_call_us,
    ratio,
)
from awm_runtime.bench._scale import add_verifier_reuse, start_server

# The targets: ratios to floors on a quiet machine (median of 3).
TARGETS = {"tool_call": 1.5, "verify": 1.5, "model_call": 3.0}
EPISODE_TOOL_CALLS, EPISODE_MODEL_CALLS = 3, 4
KINDS = ("tool_call", "verify", "model_call", "reset", "episode")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tables", type=int, default=20, help="tables in the synthetic scenario (default 20)")
    p.add_argument("--tools", type=int, default=35, help="tools in the synthetic scenario (default 35)")
    p.add_argument("--calls", type=int, default=300, help="tool calls per repeat, each side (default 300)")
    p.add_argument("--verifies", type=int, default=30, help="verifications per repeat, each side (default 30)")
    p.add_argument("--model-calls", type=int, default=300, help="model calls per repeat, each side (default 300)")
    p.add_argument("--resets", type=int, default=100, help="resets per repeat, each side (default 100)")
    p.add_argument("--episodes", type=int, default=10, help="scripted episodes per repeat (default 10)")
    p.add_argument("--repeats", type=int, default=3, help="repeats; figures are their medians (default 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--unsafe-no-sandbox", action="store_true", help="measure unconfined world and verifier code")
    add_verifier_reuse(p)
    # Test-only: a known CPU cost in one boundary path (this process, before the runtime's own call), so that a
    # test can check that the right ratio moves by its share and the others do not.
    p.add_argument("--inject-us", type=float, default=0.0, help=argparse.SUPPRESS)
    p.add_argument("--inject-at", choices=("tool_call", "verify", "model_call"), action="append",
                   help=argparse.SUPPRESS)  # repeatable; tool_call when not given


def _inject_at(args: argparse.Namespace) -> list[str]:
    return list(dict.fromkeys(args.inject_at or ["tool_call"]))


def _inject(args: argparse.Namespace, world: Any, client: Any) -> None:
    """Burn `--inject-us` of CPU in this process at the start of one boundary path, as the runtime calls it."""
    seconds = args.inject_us / 1e6
    if seconds <= 0:
        return
    at = _inject_at(args)
    if "tool_call" in at:
        real_call = world.pool.call

        async def call(*a: Any, **kw: Any) -> Any:
            burn(seconds)
            return await real_call(*a, **kw)

        world.pool.call = call
    if "verify" in at:  # the sandbox's run: once a verification (the verifier's evidence may recurse once)
        real_run = world.sandbox.run

        async def run(*a: Any, **kw: Any) -> Any:
            burn(seconds)
            return await real_run(*a, **kw)

        world.sandbox.run = run
    if "model_call" in at:
        from awm_runtime.bench._scale_peaks import BurningTransport

        client._transport = BurningTransport(client.transport, seconds)


class _ScriptedPolicy:
    """Each turn is a real model call (`ModelClient.complete`, the same request every turn); its action is
    scripted: `EPISODE_TOOL_CALLS` tool calls, then a final answer."""

    def __init__(self, client: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 calls: list[Any]) -> None:
        self.client, self.messages, self.tools_json, self.calls = client, messages, tools, calls

    @property
    def ref(self) -> Any:
        from awm_runtime import ModelRef

        return ModelRef(alias="loop", model="openai/fake-model")

    def begin(self, task: Any, tools: Any) -> list[Any]:
        from awm_runtime import Message

        return [Message(role="user", content=task.text, source="system")]

    async def act(self, messages: Any, tools: Any, *, seed: int = 0) -> Any:
        from awm_runtime import CallTool, FinalAnswer, Message, PolicyTurn

        turn = sum(1 for m in messages if m.role == "assistant")
        reply = await self.client.complete(self.messages, tools=self.tools_json)
        action = CallTool(self.calls[turn]) if turn < EPISODE_TOOL_CALLS else FinalAnswer(reply.content or "")
        return PolicyTurn(message=Message(role="assistant", content=reply.content, source="policy"),
                          action=action, usage=reply.usage)

    def observe(self, turn: Any, text: str, source: Any) -> list[Any]:
        from awm_runtime import Message

        return [Message(role="user", content=text, source=source)]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from awm_runtime.isolation import require
    from awm_runtime.logs._setup import EventStream, configure_logging

    tmp = Path(tempfile.mkdtemp(prefix="awm-bench-floors-"))
    events = EventStream(tmp / "events.jsonl")
    configure_logging(events)  # events are rendered and written, as in a run; stdout carries the JSON result
    containment = require(args.unsafe_no_sandbox)
    server, url = start_server(0, 3600, mode="echo")  # its CPU is on neither side
    try:
        figures = await _measure(args, tmp, url)
    finally:
        server.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(10)
        events.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return _report(args, figures, containment.statement)


async def _measure(args: argparse.Namespace, tmp: Path, url: str) -> dict[str, list[dict[str, float]]]:
    from awm_runtime import EpisodeSpec, Harness
    from awm_runtime._build import build_shaper
    from awm_runtime._events import bind_emitter
    from awm_runtime.bench._world import _call_for
    from awm_runtime.bench._world_data import write_bench_dataset
    from awm_runtime.episode import run_episode
    from awm_runtime.logs import EventLogSink
    from awm_runtime.logs._rundir import RunDirWriter, record_line
    from awm_runtime.models import ModelClient, ModelConfig
    from awm_runtime.models._http import _body, close_sessions
    from awm_runtime.worlds import WorldOptions, load_local_worlds
    from awm_runtime.worlds._host import ScenarioHost

    world = load_local_worlds(write_bench_dataset(tmp / "data", tables=args.tables, tools=args.tools),
                              options=WorldOptions(workers=1, tool_timeout_s=10.0,
                                                   unsafe_no_sandbox=args.unsafe_no_sandbox,
                                                   verifier_reuse=args.verifier_reuse))
    bare = None
    try:
        task = next(t for t in world.tasks() if t.scenario == "bench_suite")
        session = await world.open(task, episode_id="floors")
        names = [t.name for t in session.tools]
        rng = random.Random(args.seed)
        n = max(args.calls, EPISODE_TOOL_CALLS)
        calls = [_call_for(rng, names, i) for i in range(n)]
        app = AppFloor(task.scenario, world.dataset.source(task.scenario).full_code, session.initial_db, tmp)
        requests = app.requests([(c.name, c.arguments) for c in calls])
        verifier, why = world.verifier.usable(task.scenario, task.task_idx)
        if verifier is None:
            raise RuntimeError(f"the bench task has no usable verifier: {why}")
        verify_floor = VerifierFloor(verifier.code)
        client = ModelClient(ModelConfig(alias="loop", model="openai/fake-model", api_base=url, timeout_s=30.0),
                             "policy")
        tools = [t.to_openai() for t in session.tools]
        messages = model_request(tools)
        bare = BareModel(url, _body("fake-model", messages, {**client.config.params, "tools": tools}))
        _inject(args, world, client)
        sink = EventLogSink()
        writer = RunDirWriter(tmp / "run")
        harness = Harness(policy=_ScriptedPolicy(client, messages, tools, calls), shaper=build_shaper("awm"))
        template = session.initial_db.read_bytes()
        spare = session.db.with_name("ep-floor-reset.db")  # beside the episode DBs, on the same file system

        async def reset(_: int) -> None:
            s = await world.open(task, episode_id="reset")
            await s.close()

        async def copy(_: int) -> None:
            fd = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, template)
            finally:
                os.close(fd)
            os.unlink(spare)

        async def episode(i: int) -> None:
            s = await world.open(task, episode_id=f"episode{i}")
            try:
                record = await run_episode(EpisodeSpec(scenario=task.scenario, task_idx=task.task_idx, repeat=i),
                                           task, s, harness, sinks=[sink], run_id="floors", episode_id=f"ep{i}")
                writer.append(record_line(record))
            finally:
                await s.close()

        async def model(_: int) -> None:
            with bind_emitter("floors", sink.emit):
                await client.complete(messages, tools=tools)

        async def tool_floor(i: int) -> None:
            await app.request(*requests[i])

        host = ScenarioHost(task.scenario, world.dataset.source(task.scenario).full_code, import_db=app.db)
        host_db = str(tmp / "host.db")
        shutil.copyfile(session.initial_db, host_db)

        async def host_call(i: int) -> None:
            await host.call(host_db, calls[i].name, calls[i].arguments)

        async def tool_cost(i: int) -> None:
            await session.call_tool(calls[i])

        async def verify_cost(_: int) -> None:
            await session.verify("", [])

        final = tmp / "final.db"  # the episode DB as it is now (this process may reach it only by a descriptor)

        async def verify_floor_call(_: int) -> None:
            verify_floor(session.initial_db, final)

        # Warm every path once: imports, the verifier server, the HTTP connections, the app's first call.
        shutil.copyfile(session.db, final)
        for warm in (tool_floor, tool_cost, host_call, verify_cost, verify_floor_call, model, bare.call, reset, copy,
                     episode):
            await warm(0)
        out: dict[str, list[dict[str, float]]] = {k: [] for k in KINDS}

        def pair(kind: str, cost: tuple[float, float], floor: tuple[float, float], **more: float) -> None:
            out[kind].append({"cost": sum(cost), "floor": sum(floor), "runtime": cost[0], "world": cost[1], **more})

        for _ in range(args.repeats):
            cost, floor, host_cost = await interleaved_us(args.calls, Side(tool_cost, world), Side(tool_floor),
                                                          Side(host_call))
            pair("tool_call", cost, floor, host=sum(host_cost))
            shutil.copyfile(session.db, final)
            pair("verify", *await interleaved_us(args.verifies, Side(verify_cost, world, settle_s=0.2),
                                                 Side(verify_floor_call)))
            pair("model_call", *await interleaved_us(args.model_calls, Side(model), Side(bare.call)))
            pair("reset", *await interleaved_us(args.resets, Side(reset, world), Side(copy)))
            floors = {k: out[k][-1]["floor"] for k in ("model_call", "tool_call", "verify", "reset")}
            parts = (EPISODE_MODEL_CALLS * floors["model_call"] + EPISODE_TOOL_CALLS * floors["tool_call"]
                     + floors["verify"] + floors["reset"])
            pair("episode", await per_call_us(args.episodes, episode, world, settle_s=0.2), (parts, 0.0))
        await session.close()
        stats = world.sandbox.kept_stats  # how kept workers were sent templates (all 0 on the fork path)
        out["kept"] = [{"worker_hits": stats.worker_hits, "worker_sends": stats.worker_sends}]
        return out
    finally:
        if bare is not None:
            await bare.aclose()
        await close_sessions()
        await world.aclose()


FLOOR_IS = {
    "tool_call": "the scenario's app in this process (bare ASGI call, same request, same DB)",
    "verify": "the verifier function in this process (compiled once, same DBs)",
    "model_call": "bare aiohttp POST of the same body + orjson parse, same server",
    "reset": "the template's bytes (held in memory) written to a new file beside the episode DBs, then removed",
    "episode": f"{EPISODE_MODEL_CALLS} model + {EPISODE_TOOL_CALLS} tool call floors + verify + reset floors",
}
COST_IS = {
    "tool_call": "AwmSession.call_tool: this process + world worker",
    "verify": "AwmSession.verify: this process + verifier server and fork",
    "model_call": "ModelClient.complete: limiter, retry, transport, parse, event",
    "reset": "AwmWorld.open + AwmSession.close",
    "episode": "run_episode, scripted policy, record written: every process but the model server",
}


def _median(reps: list[dict[str, float]], key: str) -> float:
    return round(statistics.median(r[key] for r in reps), 1)


def _report(args: argparse.Namespace, figures: dict[str, list[dict[str, float]]], containment: str) -> dict[str, Any]:
    load = os.getloadavg()
    result: dict[str, Any] = {"suite": "floors", "unit": "CPU microseconds per call", "repeats": args.repeats,
                              "cpu_count": os.cpu_count(), "load_avg": [round(x, 2) for x in load],
                              "containment": containment, "targets": TARGETS,
                              "verifier": "kept workers" if args.verifier_reuse else "a fork per verification"}
    if args.verifier_reuse and figures.get("kept"):
        result["verifier_templates"] = figures["kept"][0]  # already in the worker / sent to it with the job
    if args.inject_us > 0:
        result["injected"] = {"us": args.inject_us, "at": _inject_at(args)}
    table: list[list[str]] = [["containment", containment, ""], ["verifier", result["verifier"], ""]]
    for kind in KINDS:
        reps = figures[kind]
        ratios = [r for rep in reps if (r := ratio(rep["cost"], rep["floor"])) is not None]
        median_ratio = round(statistics.median(ratios), 3) if ratios else None
        figure: dict[str, Any] = {
            "cost_us": _median(reps, "cost"), "floor_us": _median(reps, "floor"), "ratio": median_ratio,
            # Where the cost is spent: this process (the runtime's side) and the world's processes.
            "cost_split_us": {"runtime": _median(reps, "runtime"), "world": _median(reps, "world")},
            "repeats": [{"cost_us": round(r["cost"], 1), "floor_us": round(r["floor"], 1),
                         "ratio": ratio(r["cost"], r["floor"])} for r in reps],
            "cost_is": COST_IS[kind], "floor_is": FLOOR_IS[kind]}
        if kind == "tool_call":  # our host's own work per call (schema check, split, reply text), no boundary
            figure["host_in_process_us"] = _median(reps, "host")
            figure["host_ratio"] = ratio(figure["host_in_process_us"], figure["floor_us"])
        result[kind] = figure
        target = TARGETS.get(kind)
        shown = "unknown" if median_ratio is None else f"{median_ratio:.2f}x"
        split = figure["cost_split_us"]
        where = f" ({split['runtime']:,.0f} runtime + {split['world']:,.0f} world)" if split["world"] else ""
        table.append([f"{kind.replace('_', ' ')}: cost / floor",
                      f"{figure['cost_us']:,.0f}{where} / {figure['floor_us']:,.0f} us = {shown}",
                      f"<= {target:g}x" if target else ""])
        if kind == "tool_call":
            table.append(["tool call: our host in process / floor",
                          f"{figure['host_in_process_us']:,.0f} / {figure['floor_us']:,.0f} us = "
                          f"{figure['host_ratio']}x", ""])
    result["met"] = {k: result[k]["ratio"] is not None and result[k]["ratio"] <= t for k, t in TARGETS.items()}
    if args.inject_us > 0:
        table.append(["injected CPU (test only)", f"{args.inject_us:g} us a call at {', '.join(_inject_at(args))}", ""])
    table.append(["load average (1 min)", f"{load[0]:.2f} on {os.cpu_count()} cores", "quiet machine"])
    result["table"] = table
    return result


__all__ = ["add_arguments", "run"]
