"""awm-export: turn a run directory into training data (sft, grpo or pairs), one JSON object per line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from awm_runtime._errors import ConfigError
from awm_runtime.cli._common import guarded

DESCRIPTION = """Export a run directory as training data, streaming (the run is never loaded whole).

  sft    one conversation per episode; the policy's well-formed replies are the targets
         ("train": true), expert, nudge, world and system messages are context only
  grpo   one line per complete GRPO group (awm-run --group-size): rewards and advantages
  pairs  one line per expert intervention: the policy's action before the advice and after it"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="awm-export", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", type=Path, metavar="RUN", help="a run directory (the --out of awm-run)")
    p.add_argument("--format", required=True, choices=("sft", "grpo", "pairs"), dest="fmt")
    p.add_argument("--out", type=Path, metavar="FILE", help="write JSONL here (default: stdout)")
    p.add_argument("--arm", action="append", dest="arms", metavar="NAME", help="only these arms (repeatable)")
    p.add_argument("--outcomes", default="complete", metavar="LIST",
                   help="sft only: outcomes to keep, comma-separated (default complete)")
    return p


def _lines(args: argparse.Namespace, stats: Any) -> Iterator[dict[str, Any]]:
    from awm_runtime.export import arm_protocols, grpo, open_run, pairs, records, sft

    manifest = open_run(args.run)
    rows = records(args.run, set(args.arms) if args.arms else None)
    if args.fmt == "sft":
        outcomes = {o.strip() for o in args.outcomes.split(",") if o.strip()}
        unknown = outcomes - {"complete", "incomplete", "format_error", "error"}
        if unknown:
            raise ConfigError(f"--outcomes: unknown outcome {sorted(unknown)[0]!r}; use complete, incomplete, "
                              "format_error or error")
        return sft(rows, stats, outcomes=outcomes)
    if args.fmt == "grpo":
        return grpo(rows, stats)
    return pairs(rows, stats, arm_protocols(manifest))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def go() -> int:
        from awm_runtime.export import ExportStats

        stats = ExportStats()
        lines = _lines(args, stats)
        out: IO[bytes] = args.out.open("wb") if args.out else sys.stdout.buffer
        try:
            for line in lines:
                out.write(orjson.dumps(line) + b"\n")
            out.flush()
        except BrokenPipeError:  # `awm-export RUN ... | head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        finally:
            if args.out:
                out.close()
        skipped = ", ".join(f"{n} {why}" for why, n in stats.skipped.items()) or "none"
        print(f"awm-export: {stats.lines} {args.fmt} lines from {stats.records} records; skipped: {skipped}",
              file=sys.stderr)
        if args.fmt == "grpo" and stats.lines == 0 and stats.skipped.get("not in a group"):
            print("awm-export: this run has no GRPO groups; run awm-run with --group-size G", file=sys.stderr)
        return 0

    return guarded("awm-export", go)
