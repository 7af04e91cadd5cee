"""awm-worlds: list, check and pack AWM-format worlds."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from awm_runtime.cli._common import DISK_HELP, Parser, disk_mib, guarded


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="awm-worlds", description="Inspect, check and pack AWM-format worlds.")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="scenarios and tasks in a worlds directory")
    ls.add_argument("--worlds", default="builtin", metavar="builtin|awm-1k|DIR")
    ls.add_argument("--json", action="store_true")
    ck = sub.add_parser("check", help="build every scenario; run each task's no-op and reference solution",
                        description="Say which scenarios can run and why the others cannot; build every one "
                                    "that can and run, for every task, a no-op episode (does the untouched DB "
                                    "already pass? then the task is trivial) and the reference solution, through "
                                    "the real tool path and verifier. Verifier code is parsed (never run) in both "
                                    "modes, and each task whose code does not parse is reported.")
    ck.add_argument("--worlds", default="builtin", metavar="builtin|awm-1k|DIR")
    ck.add_argument("--solutions", type=Path, metavar="FILE", help="reference solutions (default: the dataset's)")
    ck.add_argument("--scenarios", default="*", metavar="GLOB", help="scenario names, comma-separated globs")
    ck.add_argument("--tasks", default="all", metavar="SPEC", help="task indices: all, 3, 0-4 or 0,2,7-9")
    ck.add_argument("--verifier", choices=("code", "sql"), default="code", help="verifier mode (default code)")
    ck.add_argument("--judge", metavar="ALIAS", help="model alias of the SQL-mode judge")
    ck.add_argument("--config", type=Path, metavar="awm.toml", help="model aliases (for --judge)")
    ck.add_argument("--foreign-keys", action="store_true", help="enforce PRAGMA foreign_keys in world DBs")
    ck.add_argument("--tool-timeout", type=float, default=30.0, metavar="S", help="seconds per tool call (default 30)")
    ck.add_argument("--world-disk-mib", type=disk_mib, metavar="MIB", help=DISK_HELP)
    ck.add_argument("--concurrency", type=int, default=4, metavar="N", help="tasks checked at once (default 4)")
    ck.add_argument("--json", action="store_true", help="stable JSON on stdout")
    ck.add_argument("--unsafe-no-sandbox", action="store_true",
                    help="run world and verifier code unconfined (only where it cannot be confined)")
    pk = sub.add_parser("pack", help="pack scenario source folders into AWM JSONL files")
    pk.add_argument("--src", type=Path, default=None, help="folder of scenario folders (default: the built-in sources)")
    pk.add_argument("--out", type=Path, default=None, help="output directory (default: the built-in data)")
    return p


def _list(args: argparse.Namespace) -> int:
    from awm_runtime.worlds import load_dataset, resolve_worlds_dir

    ds = load_dataset(resolve_worlds_dir(args.worlds))
    rows: list[dict[str, Any]] = [
        {"scenario": sc.id, "title": sc.title, "tasks": len(sc.tasks), "tables": sc.table_count,
         "seed_statements": sc.seed_count, "verifiers": len(sc.verifiers["code"].keys() | sc.verifiers["sql"]),
         "solutions": len(sc.solutions), "runnable": sc.runnable, "missing": sc.missing}
        for sc in ds.scenarios.values()]
    if args.json:
        print(json.dumps({"worlds": str(ds.root), "scenarios": rows, "problems": [str(p) for p in ds.problems]},
                         indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from awm_runtime._printable import printable

    table = Table(title=f"{ds.root}")
    longest = max((len(str(r["scenario"])) for r in rows), default=8)
    table.add_column("scenario", no_wrap=True, min_width=longest)  # a name is what users copy: never cut it
    for col in ("runs", "tasks", "tables", "seed stmts", "verifiers", "solutions"):
        table.add_column(col)
    for r in rows:
        runs = "yes" if r["runnable"] else "no: lacks " + ", ".join(f.removesuffix(".jsonl") for f in r["missing"])
        table.add_row(*(Text(printable(v, one_line=True)) for v in (
            r["scenario"], runs, r["tasks"], r["tables"], r["seed_statements"], r["verifiers"], r["solutions"])))
    console = Console()
    if not console.is_terminal:  # piped or captured: as wide as the table, not rich's default of 80 columns
        console = Console(width=max(console.width, Console(width=100_000).measure(table).maximum))
    console.print(table)
    for problem in ds.problems:
        console.print(Text.assemble(("problem:", "yellow"), " ", printable(problem, one_line=True)))
    return 0


def _summary(checks: list[Any], scenarios: list[dict[str, Any]]) -> dict[str, int]:
    refs = [c for c in checks if c.reference_passes is not None]
    return {"scenarios": len(scenarios), "runnable_scenarios": sum(s["runnable"] for s in scenarios),
            "loading_scenarios": sum(s["loads"] for s in scenarios),
            "tasks": len(checks), "loads": sum(c.loads for c in checks),
            "unverifiable": sum(c.verifier is not None for c in checks),
            "trivial": sum(c.noop_passes is True for c in checks),
            "reference_checked": len(refs), "reference_passes": sum(c.reference_passes is True for c in refs),
            "with_errors": sum(bool(c.errors) for c in checks)}


async def _run_check(args: argparse.Namespace) -> dict[str, Any]:
    import sys

    from awm_runtime.isolation import require
    from awm_runtime.scheduler import scenario_matches, select_tasks
    from awm_runtime.worlds import (
        WorldOptions,
        check_tasks,
        load_local_worlds,
        parse_verifiers,
        scenario_report,
        spec_problems,
    )

    containment = require(args.unsafe_no_sandbox)
    print(f"awm-worlds: containment: {containment.statement}", file=sys.stderr)
    world = load_local_worlds(args.worlds, solutions=args.solutions,
                              options=WorldOptions(verifier=args.verifier, foreign_keys=args.foreign_keys,
                                                   tool_timeout_s=args.tool_timeout,
                                                   unsafe_no_sandbox=args.unsafe_no_sandbox,
                                                   world_disk_mib=args.world_disk_mib,
                                                   in_flight=args.concurrency))
    try:
        if args.verifier == "sql":
            world.judge = await _judge(args)
        selected = [sid for sid in world.dataset.scenarios if scenario_matches(sid, args.scenarios)]
        await asyncio.to_thread(parse_verifiers, world, selected)
        tasks = select_tasks(world.tasks(), scenarios=args.scenarios, task_spec=args.tasks)
        checks = await check_tasks(world, tasks, concurrency=max(1, args.concurrency))
        for sid in dict.fromkeys(t.scenario for t in tasks):
            world.problems.extend(await spec_problems(world, sid))
        scenarios = [scenario_report(world, sid) for sid in selected]
    finally:
        await world.aclose()
    return {"worlds": str(world.dataset.root), "verifier": args.verifier, "containment": containment.statement,
            "summary": _summary(checks, scenarios), "scenarios": scenarios, "tasks": [c.to_dict() for c in checks],
            "problems": [{"file": p.file, "line": p.line, "scenario": p.scenario, "task_idx": p.task_idx,
                          "message": p.message} for p in world.problems]}


async def _judge(args: argparse.Namespace) -> Any:
    from awm_runtime._build import BuildContext
    from awm_runtime._errors import ConfigError
    from awm_runtime.models import load_registry, preflight
    from awm_runtime.verifiers import Judge

    if not args.judge:
        raise ConfigError("--verifier sql needs --judge ALIAS: the model that classifies each episode")
    client = BuildContext(registry=load_registry(args.config)).client(args.judge, "judge")
    await preflight([("judge", client.config)])
    return Judge(client, name=args.judge)


def nothing_ran(report: dict[str, Any], scenarios: str) -> str | None:
    """Why a check that could run no scenario checked nothing (the message of its exit 2), else None."""
    if report["summary"]["loading_scenarios"]:
        return None
    problems = report["problems"]
    if not report["scenarios"] and not problems:
        return f"no scenario of {report['worlds']} matches --scenarios {scenarios!r}: nothing was checked"
    ranked = sorted(problems, key=lambda p: p["line"] is None)[:3]
    shown = "; ".join(f"{report['worlds']}/{p['file']}" + (f":{p['line']}" if p["line"] else "")
                      + f": {p['message']}" for p in ranked)
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return f"no scenario of {report['worlds']} can run, so nothing was checked: {shown or 'see above'}{more}"


def _check(args: argparse.Namespace) -> int:
    import sys

    from awm_runtime._printable import printable
    from awm_runtime.cli._common import EXIT_CONFIG

    report = asyncio.run(_run_check(args))
    failed = nothing_ran(report, args.scenarios)
    code = EXIT_CONFIG if failed else 0
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
        if failed:
            print(printable(f"awm-worlds: error: {failed}", one_line=True), file=sys.stderr)
        return code
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    def mark(value: bool | None) -> str:
        return {True: "yes", False: "no", None: "-"}[value]

    console = Console()
    scenarios = Table(title=printable(f"awm-worlds check: {report['worlds']}: which scenarios can run", one_line=True))
    for col in ("scenario", "runs", "tasks", "tools", "why not / notes"):
        scenarios.add_column(col)
    for sc in report["scenarios"]:
        runs = "yes" if sc["loads"] else "no"
        why = sc["why_not"] or ("" if sc["description"] else "no gen_scenario row: no description")
        scenarios.add_row(*(Text(printable(v, one_line=True)) for v in (
            sc["scenario"], runs, sc["tasks"], "-" if sc["tools"] is None else sc["tools"], why[:120])))
    console.print(scenarios)
    table = Table(title=f"tasks of the scenarios that run ({report['verifier']}-mode verifiers)")
    for col in ("scenario", "task", "loads", "trivial", "reference", "errors"):
        table.add_column(col)
    for t in report["tasks"]:
        note = t["errors"][0] if t["errors"] else (f"unverified: {t['verifier']}" if t["verifier"] else "")
        table.add_row(*(Text(printable(v, one_line=True)) for v in (
            t["scenario"], t["task_idx"], mark(t["loads"]), mark(t["noop_passes"]), mark(t["reference_passes"]),
            note[:100])))
    console.print(table)
    s = report["summary"]
    console.print(f"{s['scenarios']} scenarios: {s['loading_scenarios']} run, "
                  f"{s['scenarios'] - s['loading_scenarios']} cannot (see above); "
                  f"{s['tasks']} tasks: {s['loads']} load, {s['unverifiable']} cannot be verified, "
                  f"{s['trivial']} trivial (pass with no actions), "
                  f"{s['reference_passes']}/{s['reference_checked']} reference solutions pass, "
                  f"{s['with_errors']} with errors")
    for problem in report["problems"]:
        where = problem["file"] + (f":{problem['line']}" if problem["line"] else "")
        task = f" task {problem['task_idx']}" if problem["task_idx"] is not None else ""
        line = f"problem: {where}: {problem['scenario']}{task}: {problem['message']}"
        console.print(printable(line, one_line=True), markup=False, highlight=False)
    if failed:
        print(printable(f"awm-worlds: error: {failed}", one_line=True), file=sys.stderr)
    return code


def _pack(args: argparse.Namespace) -> int:
    from awm_runtime.worlds import BUILTIN_DATA, BUILTIN_SOURCES, pack_sources

    result = pack_sources(args.src or BUILTIN_SOURCES, args.out or BUILTIN_DATA)
    print(json.dumps(result, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    commands = {"list": _list, "check": _check, "pack": _pack}
    return guarded("awm-worlds", lambda: commands[args.command](args))
