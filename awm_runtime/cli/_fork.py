"""awm-fork: continue a run's episodes from their checkpoints in new arms (ask, solo, ...), as a new run."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from awm_runtime._config import ARM_KEYS
from awm_runtime._errors import ConfigError
from awm_runtime.cli._common import EXIT_INTERRUPTED, guarded

DESCRIPTION = """Fork a run's episodes from their checkpoints (awm-run --checkpoint asks|every) and play
N continuations per arm from each, under the same scheduler, limits, resume and containment as awm-run.
The prefix is not re-sampled and not re-billed; each record carries fork: {run, episode_id, turn, ...}.

Built-in arms: ask (the expert's advice is given at the fork turn), solo (ask_expert is refused from
the fork turn on; solo:turns=K for the next K turns only) and continue (as the source arm did). Any other
NAME must say what it changes: awm-run arm keys (e.g. --arm big:policy=gpt-4.1-mini) or mode=ask|solo|continue;
a bare unknown name (--arm sloo) is refused. With an ask and a solo arm,
the summary estimates the value of asking per forked state (docs/forks.md)."""
FORK_FILE = "fork.json"  # the fork plan's arguments and its checkpoints, so that --resume continues the same plan


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="awm-fork", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", type=Path, nargs="?", metavar="RUN", help="the run directory to fork (awm-run --out)")
    p.add_argument("--episodes", metavar="FILTER",
                   help="which episodes: KEY=VAL,... with KEY arm, scenario (globs joined by |), tasks (0-4,7), "
                        "outcome, episode (an id prefix); default all")
    p.add_argument("--at", metavar="TURN|asks",
                   help="fork after TURN turns (needs --checkpoint every), or before each turn that asked or was "
                        "nudged (asks)")
    p.add_argument("--arm", action="append", dest="arms", metavar="NAME:KEY=VAL,...",
                   help="a fork arm (repeatable): ask, solo, solo:turns=K, continue, or NAME:KEY=VAL,... with "
                        f"mode=ask|solo|continue or awm-run's arm keys ({', '.join(ARM_KEYS)}), e.g. "
                        "--arm ask --arm solo")
    p.add_argument("--repeats", type=int, metavar="N", help="continuations per checkpoint and arm (default 1)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="the fork run's directory")
    p.add_argument("--resume", action="store_true", help="continue the fork run in --out")
    p.add_argument("--concurrency", type=int, metavar="N", help="episodes in flight (default: the source run's)")
    p.add_argument("--trust-manifest", action="store_true",
                   help="use the source run's worlds, world environment, sandbox switch, endpoints, key variables "
                        "and model definitions even though you did not write its manifest on this machine")
    p.add_argument("--quiet", action="store_true", help="print only the summary")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    return p


def _plan_args(args: argparse.Namespace) -> dict[str, Any]:
    """The plan's arguments: from the command line, or (--resume) from the fork run's fork.json."""
    given = {"run": str(args.run.resolve()) if args.run else None, "episodes": args.episodes, "at": args.at,
             "arms": args.arms, "repeats": args.repeats}
    saved_path = args.out / FORK_FILE
    if args.resume and saved_path.is_file():
        saved = json.loads(saved_path.read_text(encoding="utf-8"))
        changed = [k for k, v in given.items() if v is not None and v != saved.get(k)]
        if changed:
            raise ConfigError(f"--resume: {', '.join(changed)} differ from the fork run's ({saved_path}); "
                              "resume without them, or fork into another --out")
        return saved
    if args.resume:
        raise ConfigError(f"--resume: {args.out} holds no fork run ({FORK_FILE} is missing)")
    if given["run"] is None or given["at"] is None or not given["arms"]:
        raise ConfigError("give RUN, --at TURN|asks and at least one --arm (e.g. --arm ask --arm solo)")
    given["repeats"] = given["repeats"] or 1
    if given["repeats"] < 1:
        raise ConfigError(f"--repeats must be at least 1, got {given['repeats']}")
    return given


def build(args: argparse.Namespace) -> tuple[Any, Any, dict[str, Any]]:
    """The fork run's config and planner, and the plan's arguments."""
    from awm_runtime._config import RunConfig
    from awm_runtime.logs import read_manifest
    from awm_runtime.scheduler import (
        ForkPlanner,
        check_manifest,
        fork_arms,
        fork_config,
        parse_filter,
        parse_fork_arm,
        pin_checkpoints,
        pinned_checkpoints,
        plan_forks,
        select_checkpoints,
    )

    plan = _plan_args(args)
    arms = [parse_fork_arm(a) for a in plan["arms"]]  # a misspelled arm is refused before anything else
    run = Path(plan["run"])
    if not (run / "manifest.json").is_file():
        raise ConfigError(f"{run} is not a run directory (no manifest.json): pass the --out of an awm-run")
    at_text = str(plan["at"])
    if at_text != "asks" and not at_text.isdigit():
        raise ConfigError(f"--at {at_text!r}: give a turn (0, 1, ...) or asks")
    at: Any = "asks" if at_text == "asks" else int(at_text)
    names = [a.name for a in arms]
    if len(set(names)) != len(names):
        raise ConfigError(f"--arm names must be unique, got {', '.join(names)}")
    source_manifest = read_manifest(run)
    check_manifest("", run, source_manifest, trusted=args.trust_manifest)  # before anything runs
    stored = {k: v for k, v in (source_manifest.get("config") or {}).items() if k not in ("out", "resume")}
    source = RunConfig(**stored)
    if plan.get("checkpoints") is not None:  # resumed: the states fixed at fork time, checked (issue 51)
        chosen = pinned_checkpoints(run, plan["checkpoints"])
    else:
        chosen = select_checkpoints(run, at, parse_filter(plan["episodes"]))
        if not args.resume:  # a fork.json of before issue 51 holds no plan: it is re-selected, as it was
            plan["checkpoints"] = pin_checkpoints(run, chosen)
    resolved = fork_arms(source, arms, (e["arm"] for e in chosen))
    config = fork_config(source, resolved.values(), args.out, resume=args.resume, concurrency=args.concurrency)
    specs = plan_forks(chosen, arms, resolved, int(plan["repeats"]))
    info = {"source": str(run), "source_run_id": source_manifest.get("run_id"), "at": at,
            "checkpoints": len(chosen), "repeats": int(plan["repeats"]),
            "arms": {a.name: {"mode": a.mode, "solo_turns": a.solo_turns} for a in arms}}
    return config, ForkPlanner(specs, info), plan


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def go() -> int:
        from rich.console import Console

        from awm_runtime.report import print_run
        from awm_runtime.scheduler import RunControl, prepare, run

        config, planner, plan = build(args)
        args.out.mkdir(parents=True, exist_ok=True)
        if not args.resume:
            (args.out / FORK_FILE).write_text(json.dumps(plan, indent=2), encoding="utf-8")

        async def main_async() -> Any:
            prepared = await prepare(config, planner=planner)
            if not args.quiet and not args.json:
                print(f"awm-fork: {planner.planned} continuations from {planner.info['checkpoints']} checkpoints; "
                      f"containment: {prepared.containment.statement}", file=sys.stderr)
            control = RunControl(config.grace_s)
            remove = control.install_signal_handlers(lambda name, hard: None)
            try:
                return await run(prepared, control=control)
            finally:
                remove()

        result = asyncio.run(main_async())
        if args.json:
            print(json.dumps(result.summary, indent=2))
        else:
            print_run(Console(), result.summary)
            print(f"fork run directory: {result.out}", file=sys.stderr)
        if result.interrupted:
            print(f"awm-fork: stopped early: continue with awm-fork --out {result.out} --resume", file=sys.stderr)
            return EXIT_INTERRUPTED
        return 0

    return guarded("awm-fork", go)
