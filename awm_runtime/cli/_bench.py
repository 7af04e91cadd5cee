"""awm-bench: run a benchmark suite; JSON on stdout, a table on stderr."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from typing import Any

from awm_runtime.bench import SUITES
from awm_runtime.cli._common import Parser, fail, guarded


def _available() -> dict[str, Any]:
    out = {}
    for name, module in SUITES.items():
        try:
            out[name] = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    return out


def parser(suites: dict[str, Any] | None = None) -> Parser:
    """awm-bench's parser: one subcommand per installed suite."""
    suites = _available() if suites is None else suites
    p = Parser(prog="awm-bench", description="Measure awm-runtime. Prints JSON and a table.")
    sub = p.add_subparsers(dest="suite", required=True, metavar="SUITE")
    for name, module in suites.items():
        sp = sub.add_parser(name, help=(module.__doc__ or "").strip().splitlines()[0])
        module.add_arguments(sp)
    return p


def main(argv: list[str] | None = None) -> int:
    suites = _available()
    if not suites:
        fail("no benchmark suites are installed", "awm-bench")
    args = parser(suites).parse_args(argv)

    def go() -> int:
        from rich.console import Console
        from rich.table import Table

        result = asyncio.run(suites[args.suite].run(args))
        rows = result.pop("table", [])
        print(json.dumps(result, indent=2))
        if rows:
            table = Table(title=f"awm-bench {args.suite}", title_justify="left")
            for col in ("metric", "value", "target"):
                table.add_column(col)
            for row in rows:
                table.add_row(*(str(c) for c in row))
            Console(file=sys.stderr).print(table)
        return 0

    return guarded("awm-bench", go)
