"""awm-report: the summary and paired arm comparison of a run directory, recomputed from its records."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from awm_runtime._errors import ConfigError
from awm_runtime.cli._common import guarded


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="awm-report", description="Summarise a run directory: per-arm figures and, "
                                "with two or more arms, paired comparisons on the same tasks, repeats and seeds.")
    p.add_argument("run", type=Path, metavar="RUN", help="a run directory (the --out of awm-run)")
    p.add_argument("--arm", action="append", dest="arms", metavar="NAME", help="only these arms (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def go() -> int:
        from rich.console import Console

        from awm_runtime.logs import EPISODES, iter_records
        from awm_runtime.report import RunStats, paired_table, summary_table

        if not (args.run / EPISODES).is_file():
            raise ConfigError(f"{args.run} holds no {EPISODES}: pass the --out directory of an awm-run")
        stats = RunStats()
        for record in iter_records(args.run):
            if not args.arms or record["arm"] in args.arms:
                stats.add(record)
        summary = {"run": str(args.run), **stats.to_dict()}
        if args.json:
            print(json.dumps(summary, indent=2))
            return 0
        console = Console()
        console.print(summary_table(summary))
        paired = paired_table(summary)
        if paired is not None:
            console.print(paired)
        return 0

    return guarded("awm-report", go)
