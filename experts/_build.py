"""Expert plug-in factories (entry points `llm`, `oracle`, `static`, `human`) and their argument syntax."""

from __future__ import annotations

import atexit
import re
import sys
from typing import TYPE_CHECKING, Any

from awm_runtime._errors import ConfigError
from awm_runtime._interfaces import Expert
from awm_runtime._types import Task
from awm_runtime.experts._criteria import CriteriaStore
from awm_runtime.experts._human import HumanExpert, HumanQueue
from awm_runtime.experts._llm import LLMExpert
from awm_runtime.experts._oracle import OracleExpert
from awm_runtime.experts._static import StaticAdvisor
from awm_runtime.experts._terminal import TerminalDesk
from awm_runtime.experts._web import WebDesk

if TYPE_CHECKING:
    from awm_runtime._build import BuildContext
    from awm_runtime.worlds import VerifierDef


def build_llm_expert(alias: str, ctx: BuildContext) -> LLMExpert:
    """Entry point `llm`: the model alias `alias` on the expert role (criteria with --expert-criteria)."""
    client = ctx.client(alias, "expert")
    criteria = None
    if ctx.options.get("expert_criteria"):
        stores: dict[str, CriteriaStore] = ctx.options.setdefault("criteria_stores", {})
        if alias not in stores:
            world = ctx.world

            def verifier(task: Task) -> VerifierDef | None:
                dataset = getattr(world, "dataset", None)  # remote worlds hold no verifier code to distill
                if dataset is None:
                    return None
                found = dataset.verifier(task.scenario, task.task_idx, "code")
                return found or dataset.verifier(task.scenario, task.task_idx, "sql")

            stores[alias] = CriteriaStore(client, verifier)
        criteria = stores[alias]
    return LLMExpert(client, criteria=criteria)


def build_oracle_expert(arg: str, ctx: BuildContext) -> OracleExpert:
    """Entry point `oracle`: answers from the reference solutions of the loaded worlds."""
    return OracleExpert(ctx.solution)


def _inner(name: str, ctx: BuildContext, what: str) -> Expert:
    from awm_runtime._build import build_expert

    if name.partition(":")[0] in ("static", "human", "none", ""):
        raise ConfigError(f"{what} must be a model alias or 'oracle', got {name or 'nothing'!r}")
    expert = build_expert(name, ctx)
    assert expert is not None
    return expert


def build_static_advisor(arg: str, ctx: BuildContext) -> StaticAdvisor:
    """Entry point `static`: `static:oracle` or `static:ALIAS` gives one piece of advice before turn 1."""
    return StaticAdvisor(_inner(arg, ctx, "static:EXPERT"))


# One queue and one set of desks per process: every arm and episode that asks a person shares them.
_queue = HumanQueue()
_terminal: TerminalDesk | None = None
_web: dict[int, WebDesk] = {}


def parse_human_arg(arg: str) -> dict[str, Any]:
    """`human:deadline=60+fallback=gpt-5.1+web=8765` (`,` works too outside --arm); defaults: terminal, 120 s."""
    out: dict[str, Any] = {"deadline": 120.0, "fallback": None, "terminal": False, "web": None}
    for item in filter(None, (p.strip() for p in re.split(r"[,+]", arg))):
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        try:
            if key == "terminal" and not eq:
                out["terminal"] = True
            elif key == "web":
                out["web"] = int(value) if eq else 0
            elif key == "deadline" and eq:
                out["deadline"] = float(value)
                if out["deadline"] <= 0:
                    raise ValueError
            elif key == "fallback" and eq:
                out["fallback"] = value.strip()
            else:
                raise ValueError
        except ValueError:
            raise ConfigError(f"--expert human:{arg}: {item!r} is not one of terminal, web[=PORT], deadline=SECONDS, "
                              "fallback=ALIAS|oracle (joined by '+')") from None
    if out["web"] is None:
        out["terminal"] = True
    return out


def build_human_expert(arg: str, ctx: BuildContext) -> HumanExpert:
    """Entry point `human`: people answer from this terminal and/or a loopback web page."""
    global _terminal
    opts = parse_human_arg(arg)
    fallback = _inner(opts["fallback"], ctx, "human fallback=") if opts["fallback"] else None
    if opts["terminal"] and _terminal is None:
        if sys.stdin is None or sys.stdin.closed:
            raise ConfigError("--expert human reads answers from stdin, which is closed; use human:web for the page")
        _terminal = TerminalDesk(_queue).start()
        atexit.register(_terminal.stop)
    port = opts["web"]
    existing = _web.get(port) or (next(iter(_web.values()), None) if port == 0 else None)
    if port is not None and existing is None:
        try:
            desk = WebDesk(_queue, port=port).start()
        except OSError as exc:
            raise ConfigError(f"--expert human:web={port}: cannot listen on 127.0.0.1:{port} "
                              f"({exc.strerror})") from None
        _web[port] = desk
        atexit.register(desk.close)
        print(f"human expert desk: open {desk.url}", file=sys.stderr, flush=True)
    return HumanExpert(_queue, deadline_s=opts["deadline"], fallback=fallback)
