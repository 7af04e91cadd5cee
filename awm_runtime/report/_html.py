"""`awm-report RUN [RUN...] --html FILE`: one self-contained HTML page, its plots embedded as PNG.

The page has no external references (no scripts, fonts or images to fetch): it can be mailed or
archived with the run. Every text that comes from a run is escaped.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from string import Template
from typing import Any

from awm_runtime._errors import ConfigError
from awm_runtime._extras import REPORT_INSTALL
from awm_runtime.report import _sections as sec
from awm_runtime.report._ab import economics_section, paired_section
from awm_runtime.report._collect import RunData
from awm_runtime.report._compare import load_report
from awm_runtime.report._markup import esc, figure, note, section, table

MATPLOTLIB_MISSING = f"awm-report --html needs matplotlib, which is not installed: {REPORT_INSTALL}"


def require_matplotlib() -> None:
    """A one-line ConfigError naming the extra, before any run directory is read."""
    if importlib.util.find_spec("matplotlib") is None:
        raise ConfigError(MATPLOTLIB_MISSING)


def write_html_report(paths: Sequence[Path], out: Path, *, arms: list[str] | None = None) -> Path:
    """Read each run directory (streaming), render the report, and write it atomically to `out`."""
    require_matplotlib()
    if not paths:
        raise ConfigError("give at least one run directory")
    out = Path(out)
    if not out.parent.is_dir():
        raise ConfigError(f"--html {out}: the folder {out.parent} does not exist")
    if out.is_dir():
        raise ConfigError(f"--html {out}: that is a directory; name the HTML file to write")
    report = load_report(paths, arms)  # the engine of the terminal and --json too
    page = render(report.runs, report.across)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"--html {out}: cannot write it ({exc.strerror or exc})") from None
    return out


def _completion(runs: Sequence[RunData]) -> str:
    from awm_runtime.report import _plots

    rows = sec.completion_rows(runs)
    methods = sorted(({r["accountable"].method for r in rows} | {r["strict"].method for r in rows}) - {sec.NA})
    body = table(["arm", "policy", "expert", "episodes", "completion (accountable) [95%]", "strict [95%]",
                  "infra errors", "mean reward"],
                 [[r["label"], r["policy"], r["expert"], r["episodes"],
                   sec.fmt_interval(r["accountable"], r["accountable_episodes"]),
                   sec.fmt_interval(r["strict"], r["episodes"]), r["infra_errors"],
                   sec.fmt_num(r["mean_reward"])] for r in rows], table_id="table-completion")
    png = _plots.completion([(r["label"], r["accountable"], r["strict"]) for r in rows])
    return section("completion", "Completion per arm", body, figure(
        "fig-completion", png, "Completion per arm with 95% intervals, accountable and strict",
        "Accountable: complete / episodes that were not infrastructure errors. Strict: complete / all "
        f"episodes, infrastructure errors counted as failures. Intervals (95%): {', '.join(methods) or sec.NA}."))


def _heatmap(runs: Sequence[RunData]) -> str:
    from awm_runtime.report import _plots

    columns, scenarios, cells, total = sec.heatmap_cells(runs)
    png = _plots.heatmap(columns, scenarios, cells)
    shown = "" if total == len(scenarios) else (
        f" Shown: the {len(scenarios)} of {total} scenarios whose completion differs most between arms.")
    return section("scenarios", "Completion by scenario and arm", figure(
        "fig-heatmap", png, "Heatmap of completion by scenario and arm",
        "Cells: complete / accountable episodes of the scenario in the arm." + shown))


def _expert(runs: Sequence[RunData]) -> str:
    from awm_runtime.report import _plots

    rows = sec.expert_rows(runs)
    body = table(["arm", "expert calls", "per episode", "nudges", "nudges followed by an ask",
                  "completion by ask style"],
                 [[r["label"], r["expert_calls"], f"{r['per_episode']:.2f}", r["nudges"], r["followed_by_ask"],
                   r["styles"]] for r in rows], table_id="table-expert")
    series = sec.all_series(runs)
    if not any(s.expert_calls or s.nudges for s in series):
        return section("expert", "Expert calls and nudges", body, note("No expert calls or nudges were recorded."))
    return section(
        "expert", "Expert calls and nudges", body,
        figure("fig-expert-timing", _plots.expert_timing(series), "When in the episode expert calls and nudges came",
               "The turn at which each expert call was answered and each nudge was sent."),
        figure("fig-followed-by", _plots.followed_by(series), "What the policy did after a nudge or expert answer",
               "The policy's next reply after each nudge and each expert answer; a tool call is split by whether "
               "the world returned an error. Ask styles: solo (never asked), recovery (asked after trouble), "
               "blind (asked before trying)."))


def _distributions(runs: Sequence[RunData]) -> str:
    from awm_runtime.report import _plots

    series = sec.all_series(runs)
    reasons = sorted({r for s in series for r in s.end_reasons})
    outcomes = ["complete", "incomplete", "format_error", "error"]
    outcomes += ["unverified"] if any(s.outcomes.get("unverified") for s in series) else []
    body = table(["arm", *outcomes, *(f"end: {r}" for r in reasons)],
                 [[s.label, *(s.outcomes.get(o, 0) for o in outcomes), *(s.end_reasons.get(r, 0) for r in reasons)]
                  for s in series], table_id="table-outcomes")
    infra = ", ".join(f"{s.label} {s.infra_errors}" for s in series)
    return section("distributions", "Turns, rewards and how episodes ended", figure(
        "fig-distributions", _plots.distributions(series), "Distributions of turns and reward per arm",
        "Turns: policy replies per episode. Reward: as the run's reward shaper gave it. Both over the accountable "
        f"episodes, like the means beside them: infrastructure-error episodes are left out (counted apart: {infra})."),
        body,
        note("end_reason is n/a for records written before the runtime recorded it."))


def _format_errors(runs: Sequence[RunData]) -> str:
    from awm_runtime.report import _plots

    series = sec.all_series(runs)
    kinds = sec.format_error_kinds(runs)
    body = table(["arm", "episodes with format errors", *kinds],
                 [[s.label, f"{s.episodes_with_format_errors} of {s.total.episodes}",
                   *(s.format_errors.get(k, 0) for k in kinds)] for s in series], table_id="table-format-errors")
    if not kinds:
        return section("format-errors", "Format errors by kind", body, note("No format errors were recorded."))
    return section("format-errors", "Format errors by kind", figure(
        "fig-format-errors", _plots.format_errors(series, kinds), "Format errors by kind per arm",
        "Per 100 episodes of each arm; bar labels are counts."), body)


def _groups(runs: Sequence[RunData]) -> str:
    from awm_runtime.report import _plots

    rows = sec.group_rows(runs)
    if not rows:
        return ""
    body = table(["arm", "step", "phase", "episodes", "expert : solo members", "mean reward", "completion",
                  "format-error rate", "incomplete groups"],
                 [[r["label"], r["step"], r["phase"], r["episodes"], f"{r['expert_members']} : {r['solo_members']}",
                   sec.fmt_num(r["mean_reward"]), sec.fmt_pct(r["completion"]), sec.fmt_pct(r["format_error_rate"]),
                   f"{r['incomplete_groups']} of {r['groups']}"]
                  for r in rows], table_id="table-groups")
    return section("groups", "GRPO groups by step and phase", figure(
        "fig-groups", _plots.group_steps(sec.all_series(runs)), "GRPO group runs: reward and completion by step",
        "Solid: all members; dashed: members with the expert; dotted: solo members. The x axis names each "
        "step's curriculum phase (fixed: a fixed --expert-ratio)."), body)


def _config(runs: Sequence[RunData]) -> str:
    parts = []
    for run in runs:
        m = run.manifest
        facts = [("run directory", str(run.path)), ("run id", m.get("run_id", sec.NA)),
                 ("started", m.get("started_at", sec.NA)), ("sessions", len(m.get("sessions") or []) or sec.NA),
                 ("planned episodes", m.get("planned_episodes", sec.NA)), ("recorded episodes", run.episodes),
                 ("seed", m.get("seed", sec.NA)), ("host", json.dumps(m["host"]) if m.get("host") else sec.NA),
                 ("command", shlex.join(str(a) for a in m.get("argv") or []) or sec.NA)]
        versions = sorted((m.get("versions") or {}).items())
        config = sec.config_rows(m)
        parts.append(f"<h3>{esc(run.label)}</h3>" + table(["", ""], facts, text_cols=1)
                     + f"<details><summary>config ({len(config)} settings)</summary>"
                     + table(["key", "value"], config, text_cols=1) + "</details>"
                     + "<details open><summary>versions</summary>" + table(["package", "version"], versions)
                     + "</details>")
    return section("config", "Config and versions", *parts)


def _warnings(runs: Sequence[RunData]) -> str:
    out = []
    if any(run.simulated for run in runs):
        out.append("Simulated models took part: these numbers exercise the runtime; they say nothing about real "
                   "models.")
    for run in runs:
        planned = run.manifest.get("planned_episodes")
        if not run.summary_file:
            out.append(f"{run.label}: no summary.json — the run is still writing or was stopped; this report "
                       f"covers the {run.episodes} episodes recorded so far.")
        elif run.summary_file.get("interrupted"):
            out.append(f"{run.label}: the run was stopped early ({run.summary_file.get('stop_reason')}); "
                       f"{run.episodes} of {planned} planned episodes are recorded.")
    return "".join(f'<p class="warn">{esc(w)}</p>' for w in out)


def _sequential(runs: Sequence[RunData]) -> str:
    """An --until-decided run's sequential result, first: the only p-value valid after its early stop."""
    from awm_runtime.report._stopping import sequential_text

    parts = []
    for run in runs:
        seq = run.stats.get("sequential")
        if isinstance(seq, dict):
            paired = [c for c in run.stats.get("paired") or [] if isinstance(c, dict)]
            title = f"<h3>{esc(run.label)}</h3>" if len(runs) > 1 else ""
            parts.append(title + f'<p id="sequential">{esc(sequential_text(seq, paired[0] if paired else None))}</p>')
    return section("sequential", "Sequential A/B (--until-decided)", *parts) if parts else ""


def render(runs: Sequence[RunData], comparison: dict[str, Any] | None) -> str:
    from awm_runtime._version import __version__

    sections = [_warnings(runs), _sequential(runs), _completion(runs), paired_section(runs, comparison),
                economics_section(runs), _heatmap(runs), _expert(runs), _distributions(runs), _format_errors(runs),
                _groups(runs), _config(runs)]
    titles = [("sequential", "sequential"), ("completion", "completion"), ("paired", "paired"),
              ("economics", "economics"), ("scenarios", "scenarios"),
              ("expert", "expert & nudges"), ("distributions", "turns & reward"), ("format-errors", "format errors"),
              ("groups", "groups"), ("config", "config")]
    nav = " ".join(f'<a href="#{i}">{esc(t)}</a>' for i, t in titles if f'<section id="{i}"' in "".join(sections))
    names = ", ".join(run.label for run in runs)
    shared = f" · compared on {comparison['shared_tasks']} shared tasks" if comparison else ""
    meta = (f"{sum(r.episodes for r in runs)} episodes in {len(runs)} run{'s' * (len(runs) > 1)}{shared} · "
            f"generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by awm-report")
    page = Template(files("awm_runtime.report").joinpath("report_page.html").read_text(encoding="utf-8"))
    return page.substitute(title=esc(f"awm-runtime report: {names}"), meta=esc(meta), nav=nav,
                           body="\n".join(s for s in sections if s), version=esc(__version__))
