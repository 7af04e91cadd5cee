"""awm-export: turn a run directory into training data (sft, grpo, pairs or atif), one JSON object per line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from awm_runtime._errors import ConfigError
from awm_runtime.cli._common import Parser, guarded

DESCRIPTION = """Export a run directory as training data, streaming (the run is never loaded whole). Every
format loads with datasets.load_dataset("json", data_files=FILE) and feeds TRL as it is.

  sft    one TRL tool-calling conversation per episode: {"messages", "tools", "tool_schemas", ...}.
         Every assistant message is the policy's own reply; expert, nudge, world and system text
         are user/tool/system context only. Episodes with a malformed reply are left out (TRL has
         no per-message loss switch)
  grpo   TRL prompt-only rows, one per complete GRPO group (awm-run --group-size), with scenario,
         task_idx, group and reward columns; the members' rollouts with their advantages go to
         --rollouts FILE (default: beside --out, as NAME.rollouts.jsonl)
  pairs  TRL preference rows {"prompt", "chosen", "rejected"}: one per expert intervention where
         the policy's action after the advice followed it and did better than its action before
  atif   one Harbor ATIF-v1.6 trajectory per episode; expert consultations are subagent trajectories
  fork-pairs  (a fork run: awm-fork) TRL preference rows per forked state whose continuations ended
         differently: prompt = the shared prefix, chosen / rejected = the better / worse branch's first
         policy reply (--continuation whole: its whole continuation); expert text is never a target
  ask-labels  (a fork run with ask and solo arms) one row per forked state: its messages and the
         measured value of asking (value_of_asking = ΔP(complete), value_of_asking_reward, label)"""


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="awm-export", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", type=Path, metavar="RUN", help="a run directory (the --out of awm-run)")
    p.add_argument("--format", required=True, choices=("sft", "grpo", "pairs", "atif", "fork-pairs", "ask-labels"),
                   dest="fmt")
    p.add_argument("--out", type=Path, metavar="FILE", help="write JSONL here (default: stdout)")
    p.add_argument("--rollouts", type=Path, metavar="FILE",
                   help="grpo only: where the rollouts go (default NAME.rollouts.jsonl beside --out; "
                        "not written when the prompts go to stdout)")
    p.add_argument("--arm", action="append", dest="arms", metavar="NAME", help="only these arms (repeatable)")
    p.add_argument("--continuation", choices=("first", "whole"), default="first",
                   help="fork-pairs only: the branches' first policy reply (default) or whole continuation")
    p.add_argument("--outcomes", default="complete", metavar="LIST",
                   help="sft only: outcomes to keep, comma-separated (default complete)")
    p.add_argument("--drop-reasoning", action="store_true",
                   help="leave out each reply's reasoning (reasoning_content), kept by default: it was sampled")
    return p


def rollouts_path(args: argparse.Namespace) -> Path | None:
    if args.fmt != "grpo":
        if args.rollouts:
            raise ConfigError("--rollouts is for --format grpo")
        return None
    if args.rollouts:
        return Path(args.rollouts)
    return args.out.with_name(f"{args.out.stem}.rollouts.jsonl") if args.out else None


def _lines(args: argparse.Namespace, stats: Any, rollouts: Callable[[dict[str, Any]], None] | None
           ) -> Iterator[dict[str, Any]]:
    from awm_runtime.export import atif, grpo, pairs, records, run_source, sft

    source = run_source(args.run)
    rows = records(args.run, set(args.arms) if args.arms else None)
    if args.fmt == "sft":
        outcomes = {o.strip() for o in args.outcomes.split(",") if o.strip()}
        unknown = outcomes - {"complete", "incomplete", "format_error", "error", "unverified"}
        if unknown:
            raise ConfigError(f"--outcomes: unknown outcome {sorted(unknown)[0]!r}; use complete, incomplete, "
                              "format_error, error or unverified")
        return sft(rows, stats, source, outcomes=outcomes)
    if args.fmt == "grpo":
        return grpo(rows, stats, source, rollouts)
    if args.fmt == "atif":
        return atif(rows, stats, source)
    if args.fmt in ("fork-pairs", "ask-labels"):
        from awm_runtime.export._forks import ask_labels, fork_pairs

        arms = set(args.arms) if args.arms else None

        def again() -> Iterator[dict[str, Any]]:
            return records(args.run, arms)

        if args.fmt == "ask-labels":
            return ask_labels(again, stats, source)
        return fork_pairs(again, stats, source, args.continuation)
    return pairs(rows, stats, source)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def go() -> int:
        from awm_runtime.export import ExportStats
        from awm_runtime.export._rows import drop_reasoning

        stats = ExportStats()
        side = rollouts_path(args)
        side_out: IO[bytes] | None = side.open("wb") if side else None
        written = [0]

        def rollout(row: dict[str, Any]) -> None:
            assert side_out is not None
            side_out.write(orjson.dumps(drop_reasoning(row) if args.drop_reasoning else row) + b"\n")
            written[0] += 1

        lines = _lines(args, stats, rollout if side_out else None)
        out: IO[bytes] = args.out.open("wb") if args.out else sys.stdout.buffer
        try:
            for line in lines:
                out.write(orjson.dumps(drop_reasoning(line) if args.drop_reasoning else line) + b"\n")
            out.flush()
        except BrokenPipeError:  # `awm-export RUN ... | head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        finally:
            if args.out:
                out.close()
            if side_out:
                side_out.close()
        skipped = ", ".join(f"{n} {why}" for why, n in stats.skipped.items()) or "none"
        print(f"awm-export: {stats.lines} {args.fmt} lines from {stats.records} records; skipped: {skipped}",
              file=sys.stderr)
        if side:
            print(f"awm-export: {written[0]} rollouts in {side}", file=sys.stderr)
        if args.fmt == "grpo" and stats.lines == 0 and stats.skipped.get("not in a group"):
            print("awm-export: this run has no GRPO groups; run awm-run with --group-size G", file=sys.stderr)
        return 0

    return guarded("awm-export", go)
