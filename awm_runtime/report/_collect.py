"""What an HTML report needs from run directories, gathered in one streaming pass per run.

Each record is read once and reduced to small per-arm tallies (a *series*: one arm of one run); its
messages are looked at and dropped, so memory grows with the number of episodes, not their size.
Old and new record shapes are both read: a field a run does not have is simply not counted.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awm_runtime._errors import ConfigError
from awm_runtime.logs import EPISODES, MANIFEST, SUMMARY, iter_records, read_manifest
from awm_runtime.report._stopping import apply_stopping, void_p_values
from awm_runtime.report._summary import RunStats, continuation_start

PairKey = tuple[str, int, int, int]  # (scenario, task_idx, repeat, seed)
TaskKey = tuple[str, int]
NEXT_ACTIONS = ("asked the expert", "tool call", "tool error", "format error", "final answer", "episode ended")


@dataclass(slots=True)
class Tally:
    """Completion counts of a slice: complete, accountable (not an infrastructure error), all episodes."""

    complete: int = 0
    accountable: int = 0
    episodes: int = 0
    reward_sum: float = 0.0

    def add(self, outcome: str, reward: float) -> None:
        self.episodes += 1
        self.accountable += outcome not in ("error", "unverified")
        self.complete += outcome == "complete"
        self.reward_sum += reward

    @property
    def rate(self) -> float | None:
        return self.complete / self.accountable if self.accountable else None


@dataclass(slots=True)
class Series:
    """One arm of one run, reduced to what the plots and tables show."""

    run: str
    arm: str
    label: str
    total: Tally = field(default_factory=Tally)
    outcomes: Counter[str] = field(default_factory=Counter)
    end_reasons: Counter[str] = field(default_factory=Counter)
    by_scenario: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_task: dict[TaskKey, Tally] = field(default_factory=lambda: defaultdict(Tally))
    pairs: dict[PairKey, tuple[str, float]] = field(default_factory=dict)
    turns: list[int] = field(default_factory=list)  # accountable episodes only: infra errors are counted apart
    rewards: list[float] = field(default_factory=list)  # the same
    infra_errors: int = 0
    duplicates: list[PairKey] = field(default_factory=list)
    # provider economics: each policy / expert call's latency, each episode's wall time, tokens and cost
    call_latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    wall_s: list[float] = field(default_factory=list)
    format_errors: Counter[str] = field(default_factory=Counter)
    episodes_with_format_errors: int = 0
    expert_calls: int = 0
    expert_turns: list[int] = field(default_factory=list)
    nudges: int = 0
    nudge_turns: list[int] = field(default_factory=list)
    nudges_followed_by_ask: int = 0
    after_nudge: Counter[str] = field(default_factory=Counter)
    after_expert: Counter[str] = field(default_factory=Counter)
    by_ask_style: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    # GRPO groups: (step, phase, member kind) -> tally; member kind is "expert" or "solo"
    steps: dict[tuple[int, str, str], Tally] = field(default_factory=lambda: defaultdict(Tally))
    step_format_errors: Counter[int] = field(default_factory=Counter)
    step_groups: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))
    step_incomplete_groups: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))

    def add(self, r: dict[str, Any]) -> None:
        outcome = str(r.get("outcome", "error"))
        reward = float(r.get("reward") or 0.0)
        scenario, task_idx, repeat = str(r.get("scenario", "?")), int(r.get("task_idx", 0)), int(r.get("repeat", 0))
        key = (scenario, task_idx, repeat, int(r.get("seed") or 0))
        self.total.add(outcome, reward)
        self.outcomes[outcome] += 1
        self.end_reasons[str(r["end_reason"]) if r.get("end_reason") else "n/a"] += 1
        self.by_scenario[scenario].add(outcome, reward)
        self.by_task[(scenario, task_idx)].add(outcome, reward)
        if key in self.pairs:
            self.duplicates.append(key)
        else:
            self.pairs[key] = (outcome, reward)
        if outcome == "error":
            self.infra_errors += 1
        else:  # like the means beside them, the distributions are over the accountable episodes
            self.turns.append(int(r.get("turns") or 0))
            self.rewards.append(reward)
        for role, u in (r.get("usage") or {}).items():
            self.call_latency[role].extend(float(x) for x in u.get("latency_s") or ())
        if (r.get("timings") or {}).get("wall_s") is not None:
            self.wall_s.append(float(r["timings"]["wall_s"]))
        fe = {str(k): int(v) for k, v in (r.get("format_errors") or {}).items()}
        self.format_errors.update(fe)
        self.episodes_with_format_errors += bool(sum(fe.values()))
        self.expert_calls += int(r.get("expert_calls") or 0)
        after = continuation_start(r)  # a fork's prefix is the source episode's, not this arm's
        self.expert_turns += [int(a.get("turn", 0)) for a in r.get("expert_answers") or ()
                              if int(a.get("turn", 0)) > after]
        self.nudges += int(r.get("nudges") or 0)
        for nudge in r.get("nudge_log") or ():
            if int(nudge.get("turn", 0)) <= after:
                continue
            self.nudge_turns.append(int(nudge.get("turn", 0)))
            self.nudges_followed_by_ask += bool(nudge.get("followed_by_ask"))
        nudged, advised = followed_by(r.get("messages") or [])
        self.after_nudge.update(nudged)
        self.after_expert.update(advised)
        self.by_ask_style[str(r.get("ask_style") or "n/a")].add(outcome, reward)
        group = r.get("group")
        if isinstance(group, dict) and "step" in group:
            step = int(group["step"])
            kind = "expert" if group.get("with_expert", True) else "solo"
            self.steps[(step, str(group.get("phase") or "fixed"), kind)].add(outcome, reward)
            self.step_format_errors[step] += bool(sum(fe.values()))
            gid = str(r.get("group_id") or "")
            self.step_groups[step].add(gid)
            if group.get("complete") is False:  # a member still failed for infrastructure after its re-runs
                self.step_incomplete_groups[step].add(gid)


def _next_action(message: dict[str, Any]) -> str:
    """What a policy reply did: the categories of NEXT_ACTIONS (a tool call is settled by its result)."""
    if message.get("format_error"):
        return "format error"
    calls = message.get("tool_calls") or []
    if calls:
        name = ((calls[0] or {}).get("function") or {}).get("name", "")
        return "asked the expert" if name == "ask_expert" else "tool call"
    return "final answer"


def followed_by(messages: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """For each nudge and each expert answer in a transcript: what the policy did next."""
    after_nudge: list[str] = []
    after_expert: list[str] = []
    waiting: list[list[str]] = []  # the lists whose last entry awaits a policy action
    pending_call: list[list[str]] = []  # ... or a tool call's result
    for m in messages:
        source = m.get("source")
        if source == "nudge":
            waiting.append(after_nudge)
        elif source == "expert":
            waiting.append(after_expert)
        elif source == "policy" and m.get("role") == "assistant":
            action = _next_action(m)
            for target in waiting:
                target.append(action)
            pending_call = waiting if action == "tool call" else []
            waiting = []
        elif pending_call and m.get("role") == "tool" and m.get("source") == "world":
            if m.get("tool_error"):
                for target in pending_call:
                    target[-1] = "tool error"
            pending_call = []
    for target in waiting:
        target.append("episode ended")
    return after_nudge, after_expert


@dataclass(slots=True)
class RunData:
    """One run directory: its manifest and summary as written, its statistics recomputed, its series."""

    path: Path
    label: str
    manifest: dict[str, Any]
    summary_file: dict[str, Any]
    stats: dict[str, Any]
    series: dict[str, Series]
    episodes: int

    @property
    def simulated(self) -> bool:
        return any(a.get("simulated") for a in (self.stats.get("arms") or {}).values())


def _read_json(path: Path) -> dict[str, Any]:
    import json

    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load_run(path: Path, label: str, *, arms: list[str] | None = None, prefix_arms: bool = False) -> RunData:
    """Stream one run directory into a RunData (`arms` keeps only those arms)."""
    path = Path(path)
    if not (path / EPISODES).is_file():
        raise ConfigError(f"{path} holds no {EPISODES}: pass the --out directory of an awm-run")
    try:
        manifest = read_manifest(path) if (path / MANIFEST).is_file() else {}
    except ValueError as exc:
        raise ConfigError(f"{path / MANIFEST}: not valid JSON ({exc})") from None
    stats = RunStats(arm_order(manifest))
    series: dict[str, Series] = {}
    episodes = 0
    for record in iter_records(path):
        arm = str(record.get("arm", "?"))
        if arms and arm not in arms:
            continue
        episodes += 1
        if arm not in series:
            series[arm] = Series(label, arm, f"{label}/{arm}" if prefix_arms else arm)
        series[arm].add(record)
        record.pop("messages", None)
        stats.add(record)
    if not episodes:
        raise ConfigError(f"{path / EPISODES} holds no finished episodes" + (f" of arms {arms}" if arms else ""))
    if stats.paired.duplicates:
        raise ConfigError(f"{path / EPISODES}: {stats.paired.duplicate_text()}; each (arm, task, repeat, seed) must "
                          "be recorded once: remove the extra lines (or rerun) before comparing arms")
    computed = stats.to_dict()
    summary_file = _read_json(path / SUMMARY)
    apply_stopping(computed, summary_file.get("sequential"))  # an --until-decided run: the sequential result leads
    series = {name: series[name] for name in computed["arms"] if name in series}
    return RunData(path, label, manifest, summary_file, computed, series, episodes)


def arm_order(manifest: dict[str, Any]) -> list[str]:
    """The arms in the run's `--arm` order, as its manifest recorded them (empty when it does not say)."""
    arms = (manifest.get("config") or {}).get("arms") or []
    names = [str(a.get("name")) for a in arms if isinstance(a, dict) and a.get("name")]
    return names or [str(k) for k in (manifest.get("arms") or {})]


def run_labels(paths: list[Path]) -> list[str]:
    """Short, distinct labels for run directories: the fewest trailing path parts that tell them apart."""
    parts = [Path(p).resolve().parts for p in paths]
    for k in range(1, max(len(p) for p in parts) + 1):
        labels = ["/".join(p[-k:]) for p in parts]
        if len(set(labels)) == len(labels):
            return labels
    return [f"{i + 1}:{Path(p).name}" for i, p in enumerate(paths)]  # the same directory given twice


def shared_tasks(runs: list[RunData]) -> set[TaskKey]:
    """The (scenario, task) keys every run has at least one episode of."""
    keys = [{k for s in run.series.values() for k in s.by_task} for run in runs]
    return set.intersection(*keys) if keys else set()


def compare_runs(runs: list[RunData]) -> dict[str, Any]:
    """Every arm of every run, restricted to the tasks all runs share, as one RunStats (pairs by key).

    Only arms of different runs are compared (a run's own arms are compared within it), the later run
    (on the command line) minus the earlier: `b` is always the later run's arm."""
    shared = shared_tasks(runs)
    stats = RunStats([s.label for run in runs for s in run.series.values()],
                     groups={s.label: run.label for run in runs for s in run.series.values()})
    for run in runs:
        for record in iter_records(run.path):
            arm = str(record.get("arm", "?"))
            if arm not in run.series or (str(record.get("scenario")), int(record.get("task_idx", 0))) not in shared:
                continue
            record.pop("messages", None)
            record["arm"] = f"{run.label}/{arm}"
            stats.add(record)
    out = stats.to_dict()
    stopped = {s.label for run in runs if isinstance(run.summary_file.get("sequential"), dict)
               for s in run.series.values()}
    for c in out.get("paired") or []:  # data of an --until-decided run stopped because of its result
        if c.get("a") in stopped or c.get("b") in stopped:
            void_p_values(c)
    return {"shared_tasks": len(shared), **out}
