"""awm-run's command line: its flags, in the groups `awm-run --help` shows them in."""

from __future__ import annotations

import argparse
from pathlib import Path

from awm_runtime._config import ARM_KEYS
from awm_runtime.cli._common import DISK_HELP, Parser, disk_mib

DESCRIPTION = """Run concurrent agent episodes on AWM worlds and write a run directory.

With no flags: every built-in task, the simulated novice policy (sim/novice) and the
simulated oracle expert (sim/oracle), fully offline. Simulated models are labelled as such."""

ARM_EXAMPLE = "--arm solo:expert=none --arm asked:expert=sim/oracle"


def arm_help() -> str:
    """The --arm help: its keys, read from the code that parses --arm (so the list cannot drift), and an example."""
    keys = ", ".join(ARM_KEYS)
    return (f"an arm of an A/B run (repeatable): NAME:KEY=VAL,... with KEY one of {keys}; the other settings "
            f"are the run's. E.g. {ARM_EXAMPLE}")


EPILOG = f"""example, an A/B of asking an expert, stopped as soon as the answer is clear:
  awm-run {ARM_EXAMPLE} --until-decided --max-episodes 400

--arm keys: {", ".join(ARM_KEYS)}.
Every flag can also be set in awm.toml's [run] table (e.g. concurrency = 64) or as AWM_<NAME>; flags win."""


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def shards(text: str) -> int | str:
    """An argparse type: `auto` or a positive count of shards."""
    return "auto" if text == "auto" else positive_int(text)


def parser() -> argparse.ArgumentParser:
    """awm-run's parser, its flags grouped: run, models, experts and nudges, worlds, A/B and stopping, output,
    scale."""
    p = Parser(prog="awm-run", description=DESCRIPTION, epilog=EPILOG,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    _run_group(p.add_argument_group("run", "which tasks, how many times, and how each episode goes"))
    _models_group(p.add_argument_group("models", "the policy and judge, and each role's endpoint (docs/models.md)"))
    _experts_group(p.add_argument_group("experts and nudges", "the expert, its budgets, nudges, rewards and GRPO "
                                                              "groups (docs/experts.md)"))
    _worlds_group(p.add_argument_group("worlds", "where the worlds come from, how they run and how episodes are "
                                                 "judged (docs/worlds.md)"))
    _ab_group(p.add_argument_group("A/B and stopping", "arms compared on the same tasks and seeds (docs/runs.md)"))
    _output_group(p.add_argument_group("output", "the run directory and what is printed"))
    _scale_group(p.add_argument_group("scale", "episodes in flight, processes and clusters"))
    return p


def _run_group(g: argparse._ArgumentGroup) -> None:
    a = g.add_argument
    a("--config", type=Path, dest="config_path", metavar="awm.toml", help="model aliases and [run] defaults")
    a("--scenarios", metavar="GLOB", help="scenario names to run, comma-separated globs (default *)")
    a("--tasks", metavar="SPEC", help="task indices: all, 3, 0-4 or 0,2,7-9 (default all)")
    a("--split", choices=("train", "test", "all"), help="the worlds' pinned train/test split (default all)")
    a("--repeats", type=positive_int, metavar="N", help="episodes per task and arm (default 1)")
    a("--max-turns", type=positive_int, metavar="N", help="policy replies per episode (default 20)")
    a("--episode-timeout", type=float, metavar="S", dest="episode_timeout_s", help="seconds per episode (default 900)")
    a("--seed", type=int, help="base seed; episode seeds derive from it and are shared across arms")
    a("--on-format-error", choices=("continue", "end"), help="feed format errors back (continue) or end at -1")
    a("--tool-result-chars", type=int, metavar="N", help="cut tool results to N characters, 0 = never (default 3000)")
    a("--max-argument-bytes", type=positive_int, metavar="N",
      help="larger tool-call arguments are the agent's format error arguments_too_large (default 1048576)")
    a("--prompts", type=Path, metavar="DIR",
      help="a folder of prompt templates replacing the packaged ones (same file names and variables)")
    a("--resume", action="store_true", default=None, help="continue the run in --out, skipping finished episodes")
    a("--trust-manifest", action="store_true",
      help="--resume: adopt the run's worlds, world environment, sandbox switch, endpoints, key variables and "
           "model definitions from its manifest although you did not write it on this machine")
    a("--checkpoint", choices=("none", "asks", "every"),
      help="save episode checkpoints in the run directory: before each turn in which the agent asked the expert "
           "or was nudged (asks), before every turn (every), or not at all (none, default). awm-fork continues "
           "from them, and --resume continues killed episodes from their last one (docs/forks.md)")
    a("--grace", type=float, metavar="S", dest="grace_s",
      help="on Ctrl-C/SIGTERM, seconds in-flight episodes get to finish before they are cancelled (default 30)")


def _models_group(g: argparse._ArgumentGroup) -> None:
    a = g.add_argument
    a("--policy", metavar="ALIAS", help="policy model alias or policy plug-in (default sim/novice)")
    a("--protocol", choices=("native", "awm", "hermes"), help="tool-call protocol of the policy (default: its alias's)")
    a("--thinking", choices=("on", "off"), dest="enable_thinking", type=str.lower,
      help="Qwen3-style enable_thinking for the policy, sent as vLLM chat_template_kwargs (default: server's)")
    a("--judge", metavar="ALIAS", help="model alias for the judge role, which decides SQL-mode verdicts")
    # Each role's endpoint, model and key variable can be changed without editing awm.toml.
    for role in ("policy", "expert", "judge"):
        a(f"--{role}-base", metavar="URL", help=f"send every {role} call to this OpenAI-compatible base URL")
        a(f"--{role}-model", metavar="MODEL", help=f"litellm model string for the {role} (e.g. openai/NAME)")
        a(f"--{role}-key-env", metavar="VAR", help=f"environment variable holding the {role}'s API key")
    a("--preflight", choices=("full", "quick", "off"),
      help="before the run: full = keys, endpoints, models and one tiny completion per alias (default); "
           "quick = no completion; off = no checks")


def _experts_group(g: argparse._ArgumentGroup) -> None:
    a = g.add_argument
    a("--expert", metavar="ALIAS|none",
      help="expert model alias, expert plug-in (oracle, static:EXPERT, human[:OPTS]), or none (default sim/oracle)")
    a("--expert-calls", type=int, metavar="N", help="expert calls allowed per episode (default 3)")
    a("--expert-tokens", type=int, metavar="N",
      help="expert tokens (prompt + completion) per episode (default: no limit)")
    a("--expert-usd", type=float, metavar="X", help="expert dollars per episode (default unlimited)")
    a("--expert-criteria", action="store_true", default=None,
      help="show LLM experts success criteria distilled once per task from the verifier (leaks the grader)")
    a("--nudges", metavar="RULES", help="nudge rules joined by '+', e.g. on_error+on_stall:5, or none")
    a("--reward", metavar="NAME", help="reward shaper: awm, openenv, try-first, advice-cost[:C] (default awm)")
    a("--group-size", type=positive_int, metavar="G",
      help="GRPO groups: G rollouts per task and step (--repeats counts steps)")
    a("--expert-ratio", metavar="k|adaptive",
      help="expert members per group: a count, a fraction, E:S such as 6:2, or adaptive (training wheels)")
    a("--advantage", choices=("zscore", "center"), help="group advantage: (r-mean)/std (default) or r-mean")
    a("--group-attempts", type=positive_int, metavar="N",
      help="runs of a group member that keeps ending in an infrastructure error, with the same seed (default 3)")


def _worlds_group(g: argparse._ArgumentGroup) -> None:
    a = g.add_argument
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
    a("--solutions", metavar="FILE", type=Path, help="reference solutions (JSON) for oracle experts and sims")
    a("--exclude-trivial", action="store_true", default=None,
      help="skip tasks whose verifier already passes on the untouched DB (checked once per dataset, cached)")
    a("--verifier", choices=("code", "sql"), help="code: the verifier decides (default); sql: it gathers evidence "
                                                 "and the --judge model decides")
    a("--unverified", choices=("run", "skip"),
      help="tasks whose verifier is missing or does not parse: run them unverified (verdict no_verifier, "
           "default) or skip them (they are left out of the plan)")
    a("--foreign-keys", action="store_true", default=None, help="enforce PRAGMA foreign_keys in world DBs")
    a("--tool-timeout", type=float, dest="tool_timeout_s", metavar="S",
      help="seconds a tool call may take before its episode ends as a world error (default 30)")
    a("--world-workers", type=int, metavar="N", help="most world worker processes per scenario (default: one per "
                                                     "core, 2 to 8)")
    a("--world-disk-mib", type=disk_mib, metavar="MIB", help=DISK_HELP)
    a("--verifier-reuse", action="store_true", default=None,
      help="verify in kept confined workers, one per verifier code, given the DBs' bytes: over 10x less CPU a "
           "verification, but a verifier's code may keep state between its own runs (docs/worlds.md)")
    a("--unsafe-no-sandbox", action="store_true", default=None,
      help="run world and verifier code unconfined, with your files, network and keys in reach: only for "
           "machines that cannot confine it (no Landlock or seccomp) and datasets you trust")


def _ab_group(g: argparse._ArgumentGroup) -> None:
    a = g.add_argument
    a("--arm", action="append", dest="arms", metavar="NAME:KEY=VAL,...", help=arm_help())
    a("--until-decided", action="store_true", default=None,
      help="two --arm flags: run tasks in a random order in both arms and stop as soon as an anytime-valid test "
           "(a mixture SPRT on paired discordance) decides, or a budget runs out")
    a("--alpha", type=float, metavar="A", help="--until-decided: the error rate the test keeps (default 0.05)")
    a("--max-episodes", type=positive_int, metavar="N", help="--until-decided: at most N episodes (both arms)")
    a("--max-usd", type=float, metavar="X", help="--until-decided: stop once the run has spent X dollars "
                                                 "(every model of both arms needs a price)")


def _output_group(g: argparse._ArgumentGroup) -> None:
    a = g.add_argument
    a("--out", type=Path, metavar="DIR", help="run directory (default runs/<timestamp>-<id>)")
    a("--quiet", action="store_true", help="no progress bar; print only the summary")
    a("--json", action="store_true", help="print the summary as JSON on stdout (implies --quiet)")
    a("--log-stdout", action="store_true", help="also stream the events.jsonl lines to stdout")


def _scale_group(g: argparse._ArgumentGroup) -> None:
    a = g.add_argument
    a("--concurrency", type=positive_int, metavar="N", help="episodes in flight at once (default 32)")
    a("--shards", type=shards, metavar="N|auto",
      help="worker processes for this run; auto adds one per 512 episodes in flight, up to one less than "
           "the cores (default auto). With --ray: episode actors per node")
    a("--ray", metavar="ADDRESS|auto|none",
      help="run the episodes on a Ray cluster (pip install 'awm-runtime[ray]'): the address of its head "
           "(host:port), or auto for the cluster this machine belongs to; --shards then counts episode actors "
           "per node. Keys must be set in every node's environment (docs/runs.md)")
    a("--model-procs", type=int, metavar="N",
      help="run litellm calls in N shard processes (0 = in this process; default: half the cores, "
           "at least 2 and at most 4). Self-hosted OpenAI-compatible endpoints skip litellm and need none")
