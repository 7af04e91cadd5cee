"""awm-report: per-arm summaries and paired comparisons of run directories, as tables, JSON or an HTML page."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from awm_runtime.cli._common import Parser, guarded


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="awm-report", description="Summarise run directories: per-arm figures and, "
                                "with two or more arms, paired comparisons on the same tasks, repeats and seeds. "
                                "Several runs are compared on the tasks they share (later run − earlier), in the "
                                "terminal, --json and --html alike. With --html, a self-contained page with plots.")
    p.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="a run directory (the --out of awm-run)")
    p.add_argument("--arm", action="append", dest="arms", metavar="NAME", help="only these arms (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--html", type=Path, metavar="FILE",
                   help="write an HTML report with plots to FILE (needs the report extra: matplotlib)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def go() -> int:
        if args.html is not None:
            from awm_runtime.report import write_html_report

            out = write_html_report(args.runs, args.html, arms=args.arms)
            print(f"awm-report: wrote {out}")
            return 0
        from rich.console import Console

        from awm_runtime.report import load_report, print_report, report_json

        report = load_report(args.runs, args.arms)  # the same engine as --html: the same numbers
        if args.json:
            print(json.dumps(report_json(report), indent=2))
            return 0
        print_report(Console(), report)
        return 0

    return guarded("awm-report", go)
