"""awm-export: turn a run directory into training data (sft, grpo, pairs, atif, fork-pairs, ask-labels), one JSON
object per line; an export that would hold nothing is exit 2 with why, and an existing file is kept without --force."""

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
    p.add_argument("--out", type=Path, metavar="FILE",
                   help="write JSONL here (default: stdout); an existing file is kept unless --force")
    p.add_argument("--force", action="store_true", help="overwrite an existing --out (and --rollouts) file")
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
        from awm_runtime.export import ask_labels, fork_pairs

        arms = set(args.arms) if args.arms else None

        def again() -> Iterator[dict[str, Any]]:
            return records(args.run, arms)

        if args.fmt == "ask-labels":
            return ask_labels(again, stats, source)
        return fork_pairs(again, stats, source, args.continuation)
    return pairs(rows, stats, source)


def _refuse_overwrite(args: argparse.Namespace, side: Path | None) -> None:
    """An existing output file is someone's data: never replaced without --force."""
    for path, flag in ((args.out, "--out"), (side, "--rollouts")):
        if path is not None and path.exists() and not args.force:
            raise ConfigError(f"{flag} {path} already exists; pass --force to overwrite it, or choose another file")


def _partial(path: Path) -> Path:
    """Where `path` is written until the export is known to hold something (then renamed over it)."""
    return path.with_name(f".{path.name}.partial")


def why_empty(fmt: str, stats: Any, run: Path, arms: list[str] | None) -> str:
    """Why an export of `fmt` wrote no line, and what would give it some: the message of its exit 2."""
    skips = +stats.skipped  # counts of zero are no reason
    skipped = "; ".join(f"{n} {why}" for why, n in skips.most_common())
    if stats.records == 0:
        which = f" of arm {', '.join(arms)}" if arms else ""
        return f"{run} has no episode records{which}: nothing to export as {fmt}"
    if fmt == "grpo" and skips.get("not in a group"):
        return f"{run} has no GRPO groups (its episodes ran without --group-size): run awm-run with --group-size G"
    if fmt in ("fork-pairs", "ask-labels") and not skips:
        return (f"{run} is not a fork run (no record continues a checkpoint): fork one with awm-fork RUN --at asks "
                "--arm ask --arm solo --out DIR, and export that")
    if fmt == "ask-labels":
        return (f"no forked state of {run} has both an ask and a solo continuation ({skipped}): fork with "
                "--arm ask --arm solo")
    if fmt == "pairs" and not skips:
        return f"{run} has no expert advice to pair around (no episode asked an expert): run awm-run with an --expert"
    if fmt == "sft":
        hint = "; --outcomes chooses which outcomes to keep" if any(w.startswith("outcome ") for w in skips) else ""
        return f"no episode of {run} is usable as {fmt} ({skipped}){hint}"
    return f"no episode of {run} gives a {fmt} row ({skipped})"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def go() -> int:
        from awm_runtime.export import ExportStats, drop_reasoning, open_run

        stats = ExportStats()
        side = rollouts_path(args)
        _refuse_overwrite(args, side)
        open_run(args.run)  # not a run directory: one line, before any file is made
        side_out: IO[bytes] | None = _partial(side).open("wb") if side else None
        written = [0]

        def rollout(row: dict[str, Any]) -> None:
            assert side_out is not None
            side_out.write(orjson.dumps(drop_reasoning(row) if args.drop_reasoning else row) + b"\n")
            written[0] += 1

        partials = [_partial(p) for p in (args.out, side) if p is not None]
        try:
            lines = _lines(args, stats, rollout if side_out else None)
            out: IO[bytes] = _partial(args.out).open("wb") if args.out else sys.stdout.buffer
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
            if stats.lines == 0:  # nothing written is not a success: say why, leave no empty file behind
                raise ConfigError(why_empty(args.fmt, stats, args.run, args.arms))
            for final in (args.out, side):
                if final is not None:
                    os.replace(_partial(final), final)
        finally:
            for partial in partials:
                partial.unlink(missing_ok=True)
        skipped = ", ".join(f"{n} {why}" for why, n in stats.skipped.items()) or "none"
        print(f"awm-export: {stats.lines} {args.fmt} lines from {stats.records} records; skipped: {skipped}",
              file=sys.stderr)
        if side:
            print(f"awm-export: {written[0]} rollouts in {side}", file=sys.stderr)
        return 0

    return guarded("awm-export", go)
