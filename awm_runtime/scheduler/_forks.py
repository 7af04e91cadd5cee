"""Fork runs and mid-episode resume: which checkpoints to continue from, planned as units like any other.

A fork run (`awm-fork`) is a run whose episodes start from checkpoints of another run. Its plan: for each
chosen checkpoint, each fork arm and each of N continuations, one episode. Keys stay (arm, scenario, task,
repeat) so resume and the paired statistics work unchanged: within a task, `repeat` numbers the
(checkpoint, continuation) pairs, `checkpoint_index * N + continuation`, the same in every arm.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from awm_runtime._config import ARM_KEYS, ArmConfig, RunConfig, parse_arm
from awm_runtime._errors import ConfigError
from awm_runtime._seeds import episode_seed
from awm_runtime._types import EpisodeKey, EpisodeSpec, ForkSpec
from awm_runtime._units import Unit
from awm_runtime.episode import CHECKPOINTS, INDEX
from awm_runtime.scheduler._plan import parse_task_spec

Key = EpisodeKey
ForkMode = Literal["continue", "ask", "solo"]
FILTER_KEYS = ("arm", "scenario", "tasks", "outcome", "episode")
FORK_MODES: tuple[ForkMode, ...] = ("ask", "solo", "continue")  # also the built-in arm names


def read_index(root: Path) -> list[dict[str, Any]]:
    """The checkpoint index of a run directory's checkpoints/ (lines cut short by a kill are skipped)."""
    path = root / INDEX
    if not path.is_file():
        return []
    out = []
    for line in path.read_bytes().splitlines():
        try:
            out.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    return out


def in_flight(root: Path, recorded: set[str], done: set[Key]) -> dict[Key, ForkSpec]:
    """Episodes a killed run left unrecorded, each with its latest checkpoint: `--resume` continues them."""
    latest: dict[Key, dict[str, Any]] = {}
    for e in read_index(root):
        key = (str(e["arm"]), str(e["scenario"]), int(e["task_idx"]), int(e["repeat"]))
        if e["episode_id"] in recorded or key in done or not (root / e["path"]).is_file():
            continue
        if key not in latest or (e["saved_at"], e["turn"]) > (latest[key]["saved_at"], latest[key]["turn"]):
            latest[key] = e
    return {k: ForkSpec(checkpoint=str(root / e["path"]), mode="resume") for k, e in latest.items()}


def resumable(unit: Unit, resume_from: dict[Key, ForkSpec]) -> Unit:
    """`unit` with its killed episodes set to continue from their checkpoints."""
    if resume_from and any(s.key in resume_from for s in unit.specs):
        unit.specs = [s.model_copy(update={"fork": resume_from[s.key]}) if s.key in resume_from else s
                      for s in unit.specs]
    return unit


@dataclass(frozen=True, slots=True)
class ForkArm:
    """A fork arm: its name, what it does at the fork turn, and the settings it changes."""

    name: str
    mode: ForkMode
    solo_turns: int | None
    overrides: ArmConfig


def parse_fork_arm(text: str) -> ForkArm:
    """`NAME[:KEY=VAL,...]`: `ask`, `solo` and `continue` are built in; `mode=ask|solo|continue` and
    `solo_turns=K` (`turns=K`) choose the behaviour of any name; other keys are awm-run's arm keys (policy,
    expert, ...). A name that is none of the built-ins and says nothing about what it changes (`--arm sloo`)
    is refused, with the valid names: a bare unknown name is a typo far more often than a copy of the source arm
    (`--arm NAME:mode=continue` says that on purpose)."""
    name, _, rest = text.partition(":")
    mode: str = name if name in FORK_MODES else "continue"
    solo_turns = None
    kept = []
    items = [i for i in rest.split(",") if i]
    if name not in FORK_MODES and not items:
        import difflib

        close = difflib.get_close_matches(name, FORK_MODES, n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"--arm {text!r}: unknown fork arm {name!r}{hint}; the fork arms are "
                          f"{', '.join(FORK_MODES)}, or NAME:KEY=VAL,... with mode=ask|solo|continue or awm-run's "
                          f"arm keys ({', '.join(ARM_KEYS)})")
    for item in items:
        key, _, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if key == "mode":
            if value not in ("ask", "solo", "continue"):
                raise ConfigError(f"--arm {text!r}: mode must be ask, solo or continue, got {value!r}")
            mode = value
        elif key in ("solo_turns", "turns"):
            if not value.isdigit() or int(value) < 1:
                raise ConfigError(f"--arm {text!r}: {key} must be a positive integer (turns without ask_expert)")
            solo_turns = int(value)
        else:
            kept.append(item)
    if solo_turns is not None and mode != "solo":
        raise ConfigError(f"--arm {text!r}: solo_turns is for solo arms (mode=solo)")
    return ForkArm(name, mode, solo_turns, parse_arm(f"{name}:{','.join(kept)}"))  # type: ignore[arg-type]


def _matches(entry: dict[str, Any], outcome: str, terms: dict[str, str]) -> bool:
    wanted = parse_task_spec(terms.get("tasks", "all"))
    return (fnmatch.fnmatchcase(entry["arm"], terms.get("arm", "*"))
            and any(fnmatch.fnmatchcase(entry["scenario"], p) for p in terms.get("scenario", "*").split("|"))
            and (wanted is None or int(entry["task_idx"]) in wanted)
            and fnmatch.fnmatchcase(outcome, terms.get("outcome", "*"))
            and str(entry["episode_id"]).startswith(terms.get("episode", "")))


def parse_filter(text: str | None) -> dict[str, str]:
    """`--episodes KEY=VAL,...` with KEY one of arm, scenario (globs joined by |), tasks, outcome, episode."""
    terms: dict[str, str] = {}
    for item in filter(None, (text or "").split(",")):
        key, eq, value = item.partition("=")
        if not eq or key.strip() not in FILTER_KEYS:
            raise ConfigError(f"--episodes {text!r}: {item!r} is not KEY=VAL with KEY one of {', '.join(FILTER_KEYS)}")
        terms[key.strip()] = value.strip()
    return terms


def select_checkpoints(run: Path, at: int | Literal["asks"], terms: dict[str, str]) -> list[dict[str, Any]]:
    """The checkpoints of `run`'s finished episodes at `at` (a turn, or every ask) that match the filter."""
    from awm_runtime.logs import iter_records

    index = read_index(run / CHECKPOINTS)
    if not index:
        raise ConfigError(f"{run} holds no checkpoints: run awm-run with --checkpoint asks (or every) first")
    outcomes = {str(r["episode_id"]): str(r["outcome"]) for r in iter_records(run)}
    chosen = []
    for e in index:
        if e["episode_id"] not in outcomes or not _matches(e, outcomes[e["episode_id"]], terms):
            continue
        if (at == "asks" and {"asked", "nudged"} & set(e["why"])) or e["turn"] == at:
            chosen.append({**e, "path": str((run / CHECKPOINTS / e["path"]).resolve())})
    if not chosen:
        saved = sorted({w for e in index for w in e["why"]})
        raise ConfigError(f"--at {at}: no checkpoint of a finished episode in {run} matches (it saved checkpoints "
                          f"for: {', '.join(saved) or 'none'}; --at TURN needs a run with --checkpoint every)")
    return chosen


PIN_FIELDS = ("episode_id", "turn", "arm", "scenario", "task_idx", "repeat", "seed", "why", "preceding")


def _digest(path: Path) -> str:
    import hashlib

    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def pin_checkpoints(run: Path, chosen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fork plan's checkpoints as fork.json keeps them: each one's identity, its path in the source run's
    checkpoints/ and the sha256 of its file, so that a resume continues exactly these states."""
    root = (run / CHECKPOINTS).resolve()
    return [{**{k: e.get(k) for k in PIN_FIELDS}, "path": str(Path(e["path"]).relative_to(root)),
             "sha256": _digest(Path(e["path"]))} for e in chosen]


def pinned_checkpoints(run: Path, pinned: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The checkpoints fork.json fixed at fork time, checked against the source run: each must still be in its
    index, unchanged; ConfigError (one line) otherwise. Checkpoints the source gained since are not planned."""
    index = {(str(e["episode_id"]), int(e["turn"])) for e in read_index(run / CHECKPOINTS)}
    root = (run / CHECKPOINTS).resolve()
    out = []
    for e in pinned:
        path = (root / str(e["path"])).resolve()
        where = f"checkpoint {e['episode_id']} turn {e['turn']} of the fork plan (fork.json)"
        if (str(e["episode_id"]), int(e["turn"])) not in index or not path.is_relative_to(root) \
                or not path.is_file():
            raise ConfigError(f"--resume: {where} is gone from {run}; the fork cannot continue the same states: "
                              "fork into another --out")
        if _digest(path) != e.get("sha256"):
            raise ConfigError(f"--resume: {where} changed in {run} since the fork began; the fork cannot continue "
                              "the same states: fork into another --out")
        out.append({**e, "path": str(path)})
    return out


def fork_arms(source: RunConfig, arms: list[ForkArm], source_arms: Iterable[str]) -> dict[tuple[str, str], ArmConfig]:
    """The resolved arm of each (source arm, fork arm): the source arm's settings, then the fork arm's."""
    by_name = {a.name: a for a in source.arm_list()}
    used = sorted(set(source_arms))
    out: dict[tuple[str, str], ArmConfig] = {}
    for src in used:
        base = by_name.get(src, ArmConfig(name=src))
        for arm in arms:
            name = arm.name if len(used) == 1 else f"{src}.{arm.name}"
            fields = {k: getattr(arm.overrides, k) if getattr(arm.overrides, k) is not None else getattr(base, k)
                      for k in ARM_KEYS}
            merged = ArmConfig(name=name, **fields)
            if arm.mode == "ask" and (source.for_arm(merged).expert or "none") == "none":
                raise ConfigError(f"--arm {arm.name}: the ask arm needs an expert and arm {src!r} has none; "
                                  f"give one: --arm {arm.name}:expert=ALIAS")
            out[(src, arm.name)] = merged
    return out


@dataclass(slots=True)
class ForkPlanner:
    """The plan of a fork run (a `Planner`): one stage, one unit per continuation."""

    specs: list[EpisodeSpec]
    info: dict[str, Any] = field(default_factory=dict)
    summary_key = "forks"

    @property
    def planned(self) -> int:
        return len(self.specs)

    def observe(self, record: dict[str, Any]) -> None:
        return None

    def stages(self) -> Iterator[Iterable[Unit]]:
        return iter([(Unit([s]) for s in self.specs)])

    def summary(self) -> dict[str, Any]:
        return self.info


def plan_forks(chosen: list[dict[str, Any]], arms: list[ForkArm], resolved: dict[tuple[str, str], ArmConfig],
               repeats: int) -> list[EpisodeSpec]:
    """Every continuation: per task its checkpoints in a fixed order, then arm, then continuation."""
    by_task: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for e in sorted(chosen, key=lambda e: (e["scenario"], e["task_idx"], e["arm"], e["repeat"], e["episode_id"],
                                           e["turn"])):
        by_task.setdefault((e["scenario"], int(e["task_idx"])), []).append(e)
    specs = []
    for (scenario, task_idx), entries in by_task.items():
        for j, e in enumerate(entries):
            for r in range(repeats):
                seed = int(e["seed"]) if r == 0 else episode_seed(int(e["seed"]), f"fork:{e['episode_id']}",
                                                                  int(e["turn"]), r)
                for arm in arms:
                    fork = ForkSpec(checkpoint=e["path"], mode=arm.mode, solo_turns=arm.solo_turns, repeat=r)
                    specs.append(EpisodeSpec(arm=resolved[(e["arm"], arm.name)].name, scenario=scenario,
                                             task_idx=task_idx, repeat=j * repeats + r, seed=seed, fork=fork))
    return specs


def fork_config(source: RunConfig, arms: Iterable[ArmConfig], out: Path, *, resume: bool,
                concurrency: int | None) -> RunConfig:
    """The fork run's config: the source run's, with the fork arms, no groups and no checkpoints of its own."""
    changes: dict[str, Any] = {"arms": tuple(arms), "out": out, "resume": resume, "checkpoint": "none",
                               "group_size": None, "expert_ratio": None, "shards": "auto", "ray": None}
    if concurrency is not None:
        changes["concurrency"] = concurrency
    return replace_config(source, changes)


def replace_config(config: RunConfig, changes: dict[str, Any]) -> RunConfig:
    return RunConfig(**{**config.model_dump(), **changes})

