"""awm-worlds: list, check and pack AWM-format worlds."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from awm_runtime.cli._common import guarded


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="awm-worlds", description="Inspect, check and pack AWM-format worlds.")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="scenarios and tasks in a worlds directory")
    ls.add_argument("--worlds", default="builtin", metavar="builtin|DIR")
    ls.add_argument("--json", action="store_true")
    pk = sub.add_parser("pack", help="pack scenario source folders into AWM JSONL files")
    pk.add_argument("--src", type=Path, default=None, help="folder of scenario folders (default: the built-in sources)")
    pk.add_argument("--out", type=Path, default=None, help="output directory (default: the built-in data)")
    return p


def _list(args: argparse.Namespace) -> int:
    from awm_runtime.worlds import load_dataset, resolve_worlds_dir

    ds = load_dataset(resolve_worlds_dir(args.worlds))
    rows = [{"scenario": sc.id, "title": sc.title, "tasks": len(sc.tasks), "tables": len(sc.tables),
             "seed_statements": len(sc.inserts), "verifiers": len(sc.code_verifiers | sc.sql_verifiers),
             "solutions": len(sc.solutions), "runnable": sc.runnable} for sc in ds.scenarios.values()]
    if args.json:
        print(json.dumps({"worlds": str(ds.root), "scenarios": rows, "problems": [str(p) for p in ds.problems]},
                         indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{ds.root}")
    for col in ("scenario", "tasks", "tables", "seed stmts", "verifiers", "solutions"):
        table.add_column(col)
    for r in rows:
        table.add_row(str(r["scenario"]), str(r["tasks"]), str(r["tables"]), str(r["seed_statements"]),
                      str(r["verifiers"]), str(r["solutions"]))
    console = Console()
    console.print(table)
    for problem in ds.problems:
        console.print(f"[yellow]problem:[/] {problem}")
    return 0


def _pack(args: argparse.Namespace) -> int:
    from awm_runtime.worlds import BUILTIN_DATA, BUILTIN_SOURCES, pack_sources

    result = pack_sources(args.src or BUILTIN_SOURCES, args.out or BUILTIN_DATA)
    print(json.dumps(result, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    commands = {"list": _list, "pack": _pack}
    return guarded("awm-worlds", lambda: commands[args.command](args))
