"""awm-report: per-arm summaries and paired comparisons of run directories, as tables, JSON or an HTML page."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from awm_runtime._errors import ConfigError
from awm_runtime.cli._common import Parser, guarded


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="awm-report", description="Summarise run directories: per-arm figures and, "
                                "with two or more arms, paired comparisons on the same tasks, repeats and seeds. "
                                "With --html, a self-contained page with plots; several runs are compared on the "
                                "tasks they share.")
    p.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="a run directory (the --out of awm-run)")
    p.add_argument("--arm", action="append", dest="arms", metavar="NAME", help="only these arms (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--html", type=Path, metavar="FILE",
                   help="write an HTML report with plots to FILE (needs the report extra: matplotlib)")
    return p


def _summary(run: Path, arms: list[str] | None) -> dict[str, Any]:
    from awm_runtime.logs import EPISODES, MANIFEST, iter_records, read_manifest
    from awm_runtime.report import RunStats

    if not (run / EPISODES).is_file():
        raise ConfigError(f"{run} holds no {EPISODES}: pass the --out directory of an awm-run")
    from awm_runtime.report._collect import arm_order

    manifest = run / MANIFEST
    try:
        order = arm_order(read_manifest(run)) if manifest.is_file() else []
    except ValueError:
        raise ConfigError(f"{manifest}: not valid JSON") from None
    stats = RunStats(order)
    for record in iter_records(run):
        if not arms or record["arm"] in arms:
            record.pop("messages", None)
            stats.add(record)
    if stats.paired.duplicates:
        raise ConfigError(f"{run / EPISODES}: {stats.paired.duplicate_text()}; each (arm, task, repeat, seed) must be "
                          "recorded once: remove the extra lines (or rerun) before comparing arms")
    return {"run": str(run), **stats.to_dict()}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def go() -> int:
        if args.html is not None:
            from awm_runtime.report import write_html_report

            out = write_html_report(args.runs, args.html, arms=args.arms)
            print(f"awm-report: wrote {out}")
            return 0
        from rich.console import Console

        from awm_runtime.report import economics_table, forks_table, paired_table, summary_table

        summaries = [_summary(run, args.arms) for run in args.runs]
        if args.json:
            print(json.dumps(summaries[0] if len(summaries) == 1 else summaries, indent=2))
            return 0
        console = Console()
        for summary in summaries:
            if len(summaries) > 1:
                console.print(f"[bold]{summary['run']}[/]")
            console.print(summary_table(summary))
            for table in (paired_table(summary), forks_table(summary)):
                if table is not None:
                    console.print(table)
            console.print(economics_table(summary))
        return 0

    return guarded("awm-report", go)
