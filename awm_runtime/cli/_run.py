"""awm-run: run episodes of a policy (and optional expert) on AWM worlds."""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from awm_runtime._config import build_run_config
from awm_runtime._errors import ConfigError
from awm_runtime._printable import printable
from awm_runtime.cli._common import EXIT_INTERRUPTED, EXIT_UNRECORDED, guarded
from awm_runtime.cli._run_args import parser
from awm_runtime.models import load_toml

__all__ = ["main", "parser"]


def _html_needs() -> str:
    """What the report hint's --html needs that is not installed (matplotlib draws its plots), or ''."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is not None:
        return ""
    from awm_runtime._extras import REPORT_INSTALL

    return f" (install the report extra first: {REPORT_INSTALL})"


def _config(args: argparse.Namespace) -> Any:
    """CLI > the resumed run's manifest (with --resume) > awm.toml [run] > AWM_* env > defaults.

    On --resume, `prepare` refuses a flag or an awm.toml that would change what an arm means."""
    cli = {k: v for k, v in vars(args).items() if k not in ("quiet", "json", "log_stdout", "trust_manifest")}
    if cli.get("enable_thinking") is not None:
        cli["enable_thinking"] = cli["enable_thinking"] == "on"
    file: dict[str, Any] = {}
    resumed = _resumed_config(args)
    if args.config_path is None and resumed.get("config_path"):
        if Path(resumed["config_path"]).is_file():
            args.config_path = Path(resumed["config_path"])
        else:  # moved or deleted: the model definitions in manifest.json stand in for it
            del resumed["config_path"]
    if args.config_path is not None:
        table = load_toml(args.config_path).get("run", {})
        if not isinstance(table, dict):
            raise ConfigError(f"{args.config_path}: [run] must be a table")
        file = dict(table)
    return build_run_config(cli, {**file, **resumed}, file_name=str(args.config_path) if file else None,
                            file_keys=set(file) - set(resumed))


def _resumed_config(args: argparse.Namespace) -> dict[str, Any]:
    """`awm-run --out DIR --resume` continues the run as it was configured, without repeating its flags."""
    manifest = None if not args.resume or args.out is None else Path(args.out) / "manifest.json"
    if manifest is None or not manifest.is_file():
        return {}
    try:
        stored = json.loads(manifest.read_text(encoding="utf-8"))
        config = dict(stored.get("config") or {})
    except (OSError, ValueError, AttributeError) as exc:
        raise ConfigError(f"--resume: {manifest} is unreadable ({exc})") from None
    from awm_runtime.scheduler import check_manifest, own_models

    restated = {k for k, v in vars(args).items() if v is not None}
    check_manifest("--resume: ", manifest.parent, stored, trusted=args.trust_manifest, restated=restated,
                   restate_hint=True, own=own_models(args.config_path))
    return {k: v for k, v in config.items() if k not in ("out", "resume") and v is not None}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def go() -> int:
        from rich.console import Console

        from awm_runtime.cli._live import LiveView
        from awm_runtime.report import print_run
        from awm_runtime.scheduler import (
            RunControl,
            RunProgress,
            endpoint_gates,
            gate_notes,
            prepare,
            raise_open_files,
            run,
        )

        config = _config(args)
        if (low := raise_open_files(config.concurrency)) is not None:
            print(f"awm-run: {low}", file=sys.stderr)
        quiet = args.quiet or args.json
        console = Console(stderr=True)
        progress = RunProgress()
        view = None if quiet else LiveView(console, progress)

        def on_signal(name: str, hard: bool) -> None:
            text = (f"{name}: cancelling in-flight episodes now" if hard else
                    f"{name}: no new episodes; in-flight ones get {config.grace_s:g}s to finish "
                    f"(again to cancel them now)")
            if view is not None:
                view.notice = text
            else:
                print(f"awm-run: {text}", file=sys.stderr)

        async def main_async() -> Any:
            prepared = await prepare(config)  # --until-decided: the sequential test at --alpha
            concurrency = prepared.config.concurrency
            print(f"awm-run: containment: {prepared.containment.statement}", file=sys.stderr)
            for line in gate_notes(endpoint_gates(prepared.harnesses, concurrency), concurrency):
                print(f"awm-run: {line}", file=sys.stderr)
            control = RunControl(prepared.config.grace_s)
            remove = control.install_signal_handlers(on_signal)
            if view is not None:
                view.start()
            try:
                return await run(prepared, control=control, progress=progress,
                                 log_stdout=sys.stdout if args.log_stdout else None)
            finally:
                remove()
                if view is not None:
                    view.stop()

        result = asyncio.run(main_async())
        if args.json:
            print(json.dumps(result.summary, indent=2))
        else:
            print_run(Console(), result.summary)  # after an early stop its sequential result leads
            for step in result.summary.get("groups", {}).get("steps", []):  # the GRPO curriculum, step by step
                print(f"groups step {step['step']} ({step['arm']}): {step['phase'] or 'fixed'} "
                      f"{step['expert_members']}:{step['solo_members']} expert:solo, "
                      f"format-error rate {step['format_error_rate']}, incomplete groups "
                      f"{step['incomplete_groups']} of {step['groups']}", file=sys.stderr)
            sims = [a for a in result.summary["arms"].values() if a["simulated"]]
            if sims:
                Console().print("[yellow]Simulated policy: these numbers exercise the runtime; "
                                "they say nothing about real models.[/]")
            print(f"run directory: {result.out}", file=sys.stderr)
            out = shlex.quote(str(result.out))
            print(f"report: awm-report {out} --html {shlex.quote(str(Path(result.out) / 'report.html'))}"
                  f"{_html_needs()}  ·  browse: awm-view {out}", file=sys.stderr)
        for warning in result.summary.get("warnings", []):
            print(f"awm-run: warning: {warning}", file=sys.stderr)
        for line in progress.warnings.values():  # the first of each kind the run logged; events.jsonl has all
            print(f"awm-run: warning: {printable(line, one_line=True)}", file=sys.stderr)
        if result.interrupted:
            print(f"awm-run: stopped early ({result.summary.get('stop_reason')}): {result.not_run} of "
                  f"{result.planned} episodes not run ({result.summary.get('cancelled', 0)} cancelled in flight); "
                  f"continue with: awm-run --out {result.out} --resume", file=sys.stderr)
            return EXIT_INTERRUPTED
        if result.unrecorded:
            shown = ", ".join("/".join(map(str, k)) for k in result.summary.get("unrecorded", [])[:5])
            print(f"awm-run: {result.unrecorded} planned episode(s) were neither recorded nor cancelled ({shown}"
                  f"{', ...' if result.unrecorded > 5 else ''}; summary.json lists them); see events.jsonl, then "
                  f"continue with: awm-run --out {result.out} --resume", file=sys.stderr)
            return EXIT_UNRECORDED
        return 0

    return guarded("awm-run", go)
