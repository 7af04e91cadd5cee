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
from awm_runtime.cli._common import DISK_HELP, EXIT_INTERRUPTED, EXIT_UNRECORDED, Parser, disk_mib, guarded
from awm_runtime.models import load_toml

DESCRIPTION = """Run concurrent agent episodes on AWM worlds and write a run directory.

With no flags: every built-in task, the simulated novice policy (sim/novice) and the
simulated oracle expert (sim/oracle), fully offline. Simulated models are labelled as such."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="awm-run", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    a = p.add_argument
    a("--policy", metavar="ALIAS", help="policy model alias or policy plug-in (default sim/novice)")
    a("--expert", metavar="ALIAS|none",
      help="expert model alias, expert plug-in (oracle, static:EXPERT, human[:OPTS]), or none (default sim/oracle)")
    a("--worlds", metavar="builtin|awm-1k|DIR|URL",
      help="built-in worlds; awm-1k[@REV], the AgentWorldModel-1K release from the Hugging Face Hub (downloaded "
           "into its cache on first use); a directory in the AgentWorldModel format; or a remote world: "
           "openenv+http://HOST:PORT (an OpenEnv AWM server), mcp+http://HOST:PORT/PATH or mcp+stdio:'COMMAND' "
           "(any MCP server; needs --tasks-file)")
    a("--tasks-file", type=Path, metavar="FILE", help="tasks of an MCP world: JSONL {\"task\": ..., \"id\": ...}")
    a("--world-env", action="append", metavar="KEY=VAL|KEY",
      help="MCP stdio worlds: set a variable in the server's environment, or pass one of ours by name; "
           "{episode_dir} in a value (or in the command) is a fresh directory per episode (repeatable)")
    a("--scenario-name", metavar="NAME", help="MCP worlds: the scenario's name (default: the server's own name)")
    a("--world-reset-tool", metavar="TOOL",
      help="MCP HTTP worlds: a tool of the server that resets its state, called before each episode and hidden "
           "from the agent")
    a("--world-spares", type=int, metavar="N",
      help="MCP stdio worlds: servers started ahead of the episodes that will use them (default 2; 0 = none)")
    a("--prompts", type=Path, metavar="DIR",
      help="a folder of prompt templates replacing the packaged ones (same file names and variables)")
    a("--solutions", metavar="FILE", type=Path, help="reference solutions (JSON) for oracle experts and sims")
    a("--scenarios", metavar="GLOB", help="scenario names to run, comma-separated globs (default *)")
    a("--tasks", metavar="SPEC", help="task indices: all, 3, 0-4 or 0,2,7-9 (default all)")
    a("--split", choices=("train", "test", "all"), help="the worlds' pinned train/test split (default all)")
    a("--repeats", type=_positive_int, metavar="N", help="episodes per task and arm (default 1)")
    a("--concurrency", type=_positive_int, metavar="N", help="episodes in flight at once (default 32)")
    a("--max-turns", type=_positive_int, metavar="N", help="policy replies per episode (default 20)")
    a("--episode-timeout", type=float, metavar="S", dest="episode_timeout_s", help="seconds per episode (default 900)")
    a("--reward", metavar="NAME", help="reward shaper: awm, openenv, try-first, advice-cost[:C] (default awm)")
    a("--nudges", metavar="RULES", help="nudge rules joined by '+', e.g. on_error+on_stall:5, or none")
    a("--expert-calls", type=int, metavar="N", help="expert calls allowed per episode (default 3)")
    # Experts and GRPO groups (docs/experts.md).
    a("--expert-tokens", type=int, metavar="N",
      help="expert tokens (prompt + completion) per episode (default: no limit)")
    a("--expert-usd", type=float, metavar="X", help="expert dollars per episode (default unlimited)")
    a("--expert-criteria", action="store_true", default=None,
      help="show LLM experts success criteria distilled once per task from the verifier (leaks the grader)")
    a("--group-size", type=_positive_int, metavar="G",
      help="GRPO groups: G rollouts per task and step (--repeats counts steps)")
    a("--expert-ratio", metavar="k|adaptive",
      help="expert members per group: a count, a fraction, E:S such as 6:2, or adaptive (training wheels)")
    a("--advantage", choices=("zscore", "center"), help="group advantage: (r-mean)/std (default) or r-mean")
    a("--group-attempts", type=_positive_int, metavar="N",
      help="runs of a group member that keeps ending in an infrastructure error, with the same seed (default 3)")
    a("--on-format-error", choices=("continue", "end"), help="feed format errors back (continue) or end at -1")
    a("--protocol", choices=("native", "awm", "hermes"), help="tool-call protocol of the policy (default: its alias's)")
    a("--thinking", choices=("on", "off"), dest="enable_thinking", type=str.lower,
      help="Qwen3-style enable_thinking for the policy, sent as vLLM chat_template_kwargs (default: server's)")
    a("--tool-result-chars", type=int, metavar="N", help="cut tool results to N characters, 0 = never (default 3000)")
    a("--max-argument-bytes", type=_positive_int, metavar="N",
      help="larger tool-call arguments are the agent's format error arguments_too_large (default 1048576)")
    a("--arm", action="append", dest="arms", metavar="NAME:KEY=VAL,...",
      help="an arm of an A/B run, e.g. --arm solo:expert=none --arm asked:expert=sim/oracle (repeatable)")
    a("--seed", type=int, help="base seed; episode seeds derive from it and are shared across arms")
    a("--config", type=Path, dest="config_path", metavar="awm.toml", help="model aliases and [run] defaults")
    a("--out", type=Path, metavar="DIR", help="run directory (default runs/<timestamp>-<id>)")
    a("--resume", action="store_true", default=None, help="continue the run in --out, skipping finished episodes")
    a("--trust-manifest", action="store_true",
      help="--resume: adopt the run's worlds, world environment, sandbox switch, endpoints, key variables and "
           "model definitions from its manifest although you did not write it on this machine")
    # World engine: which tasks, how they are judged, how worlds run.
    a("--exclude-trivial", action="store_true", default=None,
      help="skip tasks whose verifier already passes on the untouched DB (checked once per dataset, cached)")
    a("--verifier", choices=("code", "sql"), help="code: the verifier decides (default); sql: it gathers evidence "
                                                 "and the --judge model decides")
    a("--judge", metavar="ALIAS", help="model alias for the judge role, which decides SQL-mode verdicts")
    a("--foreign-keys", action="store_true", default=None, help="enforce PRAGMA foreign_keys in world DBs")
    a("--tool-timeout", type=float, dest="tool_timeout_s", metavar="S",
      help="seconds a tool call may take before its episode ends as a world error (default 30)")
    a("--world-workers", type=int, metavar="N", help="most world worker processes per scenario (default: one per "
                                                     "core, 2 to 8)")
    a("--world-disk-mib", type=disk_mib, metavar="MIB", help=DISK_HELP)
    a("--unsafe-no-sandbox", action="store_true", default=None,
      help="run world and verifier code unconfined, with your files, network and keys in reach: only for "
           "machines that cannot confine it (no Landlock or seccomp) and datasets you trust")
    a("--unverified", choices=("run", "skip"),
      help="tasks whose verifier is missing or does not parse: run them unverified (verdict no_verifier, "
           "default) or skip them (they are left out of the plan)")
    # Model routing: each role's endpoint, model and key variable can be changed without editing awm.toml.
    for role in ("policy", "expert", "judge"):
        a(f"--{role}-base", metavar="URL", help=f"send every {role} call to this OpenAI-compatible base URL")
        a(f"--{role}-model", metavar="MODEL", help=f"litellm model string for the {role} (e.g. openai/NAME)")
        a(f"--{role}-key-env", metavar="VAR", help=f"environment variable holding the {role}'s API key")
    a("--preflight", choices=("full", "quick", "off"),
      help="before the run: full = keys, endpoints, models and one tiny completion per alias (default); "
           "quick = no completion; off = no checks")
    a("--model-procs", type=int, metavar="N",
      help="run litellm calls in N shard processes (0 = in this process; default: half the cores, "
           "at least 2 and at most 4). Self-hosted OpenAI-compatible endpoints skip litellm and need none")
    a("--quiet", action="store_true", help="no progress bar; print only the summary")
    a("--json", action="store_true", help="print the summary as JSON on stdout (implies --quiet)")
    # Scheduler and logs (issue 8).
    a("--shards", type=_shards, metavar="N|auto",
      help="worker processes for this run; auto adds one per 512 episodes in flight, up to one less than "
           "the cores (default auto). With --ray: episode actors per node")
    a("--ray", metavar="ADDRESS|auto|none",
      help="run the episodes on a Ray cluster (pip install 'awm-runtime[ray]'): the address of its head "
           "(host:port), or auto for the cluster this machine belongs to; --shards then counts episode actors "
           "per node. Keys must be set in every node's environment (docs/runs.md)")
    a("--grace", type=float, metavar="S", dest="grace_s",
      help="on Ctrl-C/SIGTERM, seconds in-flight episodes get to finish before they are cancelled (default 30)")
    a("--log-stdout", action="store_true", help="also stream the events.jsonl lines to stdout")
    a("--checkpoint", choices=("none", "asks", "every"),
      help="save episode checkpoints in the run directory: before each turn in which the agent asked the expert "
           "or was nudged (asks), before every turn (every), or not at all (none, default). awm-fork continues "
           "from them, and --resume continues killed episodes from their last one (docs/forks.md)")
    # Sequential A/B (issue 26, docs/runs.md "Stopping when the answer is clear").
    a("--until-decided", action="store_true", default=None,
      help="two --arm flags: run tasks in a random order in both arms and stop as soon as an anytime-valid test "
           "(a mixture SPRT on paired discordance) decides, or a budget runs out")
    a("--alpha", type=float, metavar="A", help="--until-decided: the error rate the test keeps (default 0.05)")
    a("--max-episodes", type=_positive_int, metavar="N", help="--until-decided: at most N episodes (both arms)")
    a("--max-usd", type=float, metavar="X", help="--until-decided: stop once the run has spent X dollars "
                                                 "(every model of both arms needs a price)")
    return p


def _html_needs() -> str:
    """What the report hint's --html needs that is not installed (matplotlib draws its plots), or ''."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is not None:
        return ""
    return " (install matplotlib first: pip install 'matplotlib>=3.8,<4')"


def _shards(text: str) -> int | str:
    return "auto" if text == "auto" else _positive_int(text)


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
        file = dict(load_toml(args.config_path).get("run", {}))
        if not isinstance(file, dict):
            raise ConfigError(f"{args.config_path}: [run] must be a table")
    return build_run_config(cli, {**file, **resumed})


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
    from awm_runtime.logs._trust import check_manifest, own_models

    restated = {k for k, v in vars(args).items() if v is not None}
    check_manifest("--resume: ", manifest.parent, stored, trusted=args.trust_manifest, restated=restated,
                   restate_hint=True, own=own_models(args.config_path))
    return {k: v for k, v in config.items() if k not in ("out", "resume") and v is not None}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def go() -> int:
        from rich.console import Console

        from awm_runtime.cli._live import LiveView
        from awm_runtime.report import economics_table, paired_table, sequential_text, summary_table
        from awm_runtime.scheduler import RunControl, RunProgress, prepare, run
        from awm_runtime.scheduler._admission import endpoint_gates, gate_notes
        from awm_runtime.scheduler._fds import raise_open_files

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
            prepared = await prepare(config)
            print(f"awm-run: containment: {prepared.containment.statement}", file=sys.stderr)
            for line in gate_notes(endpoint_gates(prepared.harnesses, config.concurrency), config.concurrency):
                print(f"awm-run: {line}", file=sys.stderr)
            stopping = None
            if config.until_decided:
                from awm_runtime.report import SequentialTest
                from awm_runtime.scheduler import require_prices

                if config.max_usd is not None:
                    require_prices(prepared)
                stopping = SequentialTest(config.alpha)
            control = RunControl(config.grace_s)
            remove = control.install_signal_handlers(on_signal)
            if view is not None:
                view.start()
            try:
                return await run(config, prepared=prepared, control=control, progress=progress,
                                 log_stdout=sys.stdout if args.log_stdout else None, stopping=stopping)
            finally:
                remove()
                if view is not None:
                    view.stop()

        result = asyncio.run(main_async())
        if args.json:
            print(json.dumps(result.summary, indent=2))
        else:
            Console().print(summary_table(result.summary))
            paired = paired_table(result.summary)
            if paired is not None:
                Console().print(paired)
            for step in result.summary.get("groups", {}).get("steps", []):  # the GRPO curriculum, step by step
                print(f"groups step {step['step']} ({step['arm']}): {step['phase'] or 'fixed'} "
                      f"{step['expert_members']}:{step['solo_members']} expert:solo, "
                      f"format-error rate {step['format_error_rate']}, incomplete groups "
                      f"{step['incomplete_groups']} of {step['groups']}", file=sys.stderr)
            Console().print(economics_table(result.summary))
            if result.summary.get("sequential"):
                print(sequential_text(result.summary["sequential"]), file=sys.stderr)
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
