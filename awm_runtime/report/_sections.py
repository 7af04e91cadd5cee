"""The report's sections: each turns collected runs into a table and the data of its figure.

Summary fields are read tolerantly: a run written before a field existed shows "n/a" for it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from awm_runtime.report._collect import RunData, Series
from awm_runtime.report._intervals import Interval, completion_interval, mean_difference_interval
from awm_runtime.report._stopping import NOT_VALID

NA = "n/a"
MAX_FOREST_SCENARIOS = 25  # past this a forest plot shows only the overall rows
MAX_HEATMAP_SCENARIOS = 60
P_KEYS = ("completion_p", "p_value", "p", "mcnemar_p")  # completion_p: today's summaries; the rest: older runs
HOLM_KEYS = ("completion_p_holm", "p_holm", "holm_p", "p_adjusted", "p_value_holm")
LEGACY_METHOD = "exact McNemar test on discordant pairs; 95% CIs by task-clustered bootstrap"


def first(d: dict[str, Any], keys: Iterable[str]) -> Any:
    for k in keys:
        if d.get(k) is not None:
            return d[k]
    return None


def fmt_p(p: Any) -> str:
    if not isinstance(p, int | float):
        return NA
    return "<1e-6" if p < 1e-6 else f"{p:.3g}"


def fmt_pct(x: Any) -> str:
    return f"{100 * x:.1f}%" if isinstance(x, int | float) else NA


def fmt_num(x: Any, digits: int = 3) -> str:
    return f"{x:.{digits}f}" if isinstance(x, int | float) else NA


def fmt_signed(x: Any, ci: Any) -> str:
    if not isinstance(x, int | float):
        return NA
    text = f"{x:+.3f}"
    if isinstance(ci, list | tuple) and len(ci) == 2 and all(isinstance(v, int | float) for v in ci):
        text += f" [{ci[0]:+.3f}, {ci[1]:+.3f}]"
    return text


def fmt_interval(iv: Interval, n: int | None = None) -> str:
    """`41.7% [22.8, 63.1] of 24`; 0 of 0 is `n/a (0 of 0)`, never 0%."""
    of = "" if n is None else f" of {n}"
    if iv.empty or iv.rate is None or iv.low is None or iv.high is None:
        return NA + (f" ({'0' + of})" if n is not None else "")
    return f"{100 * iv.rate:.1f}% [{100 * iv.low:.1f}, {100 * iv.high:.1f}]{of}"


def who(ref: Any) -> str:
    if not isinstance(ref, dict) or not ref:
        return "none"
    label = str(ref.get("alias") or ref.get("model") or "?")
    return f"{label} (simulated)" if ref.get("simulated") else label


def all_series(runs: Sequence[RunData]) -> list[Series]:
    return [s for run in runs for s in run.series.values()]


def arm_stats(runs: Sequence[RunData], series: Series) -> dict[str, Any]:
    for run in runs:
        if run.label == series.run:
            return dict((run.stats.get("arms") or {}).get(series.arm) or {})
    return {}


def arm_roles(runs: Sequence[RunData], series: Series) -> dict[str, Any]:
    """The arm's policy and expert as the run resolved them (manifest), else as its records name them."""
    for run in runs:
        if run.label == series.run:
            resolved = (run.manifest.get("arms") or {}).get(series.arm)
            if isinstance(resolved, dict) and "policy" in resolved:
                return resolved
    return arm_stats(runs, series)


def completion_rows(runs: Sequence[RunData]) -> list[dict[str, Any]]:
    """Per series: accountable and strict completion with 95% intervals, infra errors, the arm's roles."""
    rows = []
    for s in all_series(runs):
        stats = arm_stats(runs, s)
        roles = arm_roles(runs, s)
        accountable = completion_interval((t.complete, t.accountable) for t in s.by_task.values())
        strict = completion_interval((t.complete, t.episodes) for t in s.by_task.values())
        infra = stats.get("infra_errors", stats.get("infra_error_count", s.outcomes.get("error", 0)))
        rows.append({"series": s, "label": s.label, "policy": who(roles.get("policy")),
                     "expert": who(roles.get("expert")), "episodes": s.total.episodes,
                     "accountable_episodes": s.total.accountable, "accountable": accountable, "strict": strict,
                     "infra_errors": infra, "mean_reward": stats.get("mean_reward"),
                     "format_error_rate": stats.get("format_error_rate")})
    return rows


def comparison_method(comparisons: Sequence[dict[str, Any]], stats: dict[str, Any]) -> str:
    """The statistics' own statement of the method (`paired_method`), or what an old summary implies."""
    if stats.get("paired_method"):
        return str(stats["paired_method"])
    if any("mcnemar_p" in c for c in comparisons):
        return LEGACY_METHOD
    return NA


def p_text(c: dict[str, Any], metric: str = "completion") -> str:
    """The p of a comparison as it prints, with its test: `0.0039 (McNemar exact)`, `< 1e-5 (Monte Carlo, ...)`."""
    text = c.get(f"{metric}_p_text") or (fmt_p(first(c, P_KEYS)) if metric == "completion" else fmt_p(
        c.get(f"{metric}_p")))
    if text in (NA, NOT_VALID):
        return str(text)
    test = c.get(f"{metric}_test")
    floor = c.get(f"{metric}_p_min")
    out = f"{text} ({test})" if test and "Monte Carlo" not in text else text
    if isinstance(floor, int | float) and floor > 0.001:
        out += f"; smallest possible {floor:.3g}"
    return out


def holm_text(c: dict[str, Any], metric: str = "completion") -> str:
    return c.get(f"{metric}_p_holm_text") or fmt_p(first(c, HOLM_KEYS) if metric == "completion"
                                                   else c.get(f"{metric}_p_holm"))


def _pair_clusters(a: Series, b: Series, scenario: str | None) -> tuple[list[tuple[float, int]], ...]:
    """Per task of (optionally) one scenario: (sum of completion differences, pairs), and the same for reward."""
    by_task: dict[tuple[str, int], list[tuple[int, float]]] = defaultdict(list)
    for key, (out_a, rew_a) in a.pairs.items():
        if (scenario is not None and key[0] != scenario) or key not in b.pairs:
            continue
        out_b, rew_b = b.pairs[key]
        if "error" in (out_a, out_b):
            continue
        by_task[(key[0], key[1])].append((int(out_b == "complete") - int(out_a == "complete"), rew_b - rew_a))
    completion = [(float(sum(d for d, _ in v)), len(v)) for v in by_task.values()]
    reward = [(sum(r for _, r in v), len(v)) for v in by_task.values()]
    return completion, reward


def _mean(clusters: list[tuple[float, int]]) -> float | None:
    n = sum(c for _, c in clusters)
    return sum(s for s, _ in clusters) / n if n else None


def forest_rows(comparisons: Sequence[dict[str, Any]], series: dict[str, Series]) -> tuple[list[Any], list[Any]]:
    """Rows for the completion and reward panels: per comparison, each scenario (if few), then overall."""
    from awm_runtime.report._plots import ForestRow

    completion: list[ForestRow] = []
    reward: list[ForestRow] = []
    for c in comparisons:
        a, b = series.get(str(c.get("a"))), series.get(str(c.get("b")))
        name = f"{c.get('a')} → {c.get('b')}"
        if a is not None and b is not None:
            scenarios = sorted(set(a.by_scenario) & set(b.by_scenario))
            for scenario in scenarios if len(scenarios) <= MAX_FOREST_SCENARIOS and len(scenarios) > 1 else ():
                comp, rew = _pair_clusters(a, b, scenario)
                ci_c, ci_r = mean_difference_interval(comp), mean_difference_interval(rew)
                completion.append(ForestRow(f"  {scenario}", _mean(comp), ci_c))
                reward.append(ForestRow(f"  {scenario}", _mean(rew), ci_r))
        unpaired = " UNPAIRED" if c.get("design") == "unpaired" else ""
        completion.append(ForestRow(f"{name} (all{unpaired})", c.get("completion_diff"),
                                    _ci(c.get("completion_diff_ci95")), True, _p_note(c, "completion")))
        reward.append(ForestRow(f"{name} (all{unpaired})", c.get("reward_diff"), _ci(c.get("reward_diff_ci95")),
                                True, _p_note(c, "reward")))
        if c.get("strict_completion_diff") is not None:
            flag = "  ≠ accountable" if c.get("strict_disagrees") else ""
            completion.append(ForestRow(f"{name} (strict{unpaired}){flag}", c.get("strict_completion_diff"),
                                        _ci(c.get("strict_completion_diff_ci95")), True,
                                        _p_note(c, "strict_completion")))
            reward.append(ForestRow(f"{name} (strict{unpaired}){flag}", None, None, True))
    return completion, reward


def _p_note(c: dict[str, Any], metric: str) -> str:
    text = p_text(c, metric).split("; smallest")[0]
    if text == NA:
        return ""
    if text == NOT_VALID:
        return f"p {NOT_VALID}"
    note = f"p {text}" if text.startswith("<") else f"p = {text}"
    holm = holm_text(c, metric)
    return note + (f", Holm {holm}" if holm != NA and c.get(f"{metric}_p_holm") is not None else "")


def _ci(value: Any) -> tuple[float, float] | None:
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int | float) for v in value):
        return float(value[0]), float(value[1])
    return None


def heatmap_cells(runs: Sequence[RunData]) -> tuple[list[str], list[str], list[list[tuple[int, int] | None]], int]:
    """Columns, scenario rows (at most MAX_HEATMAP_SCENARIOS: those whose completion differs most between
    series), cells as (complete, accountable), and how many scenarios there are in all."""
    series = all_series(runs)
    every = sorted({sc for s in series for sc in s.by_scenario})

    def spread(sc: str) -> tuple[float, int]:
        rates = [r for s in series if sc in s.by_scenario and (r := s.by_scenario[sc].rate) is not None]
        return (max(rates) - min(rates) if rates else 0.0, sum(s.by_scenario[sc].episodes for s in series
                                                                if sc in s.by_scenario))

    scenarios = every if len(every) <= MAX_HEATMAP_SCENARIOS else sorted(
        sorted(every, key=spread, reverse=True)[:MAX_HEATMAP_SCENARIOS])
    cells = [[(s.by_scenario[sc].complete, s.by_scenario[sc].accountable) if sc in s.by_scenario else None
              for s in series] for sc in scenarios]
    return [s.label for s in series], scenarios, cells, len(every)


def expert_rows(runs: Sequence[RunData]) -> list[dict[str, Any]]:
    rows = []
    for s in all_series(runs):
        n = max(s.total.episodes, 1)
        styles = {k: s.by_ask_style[k] for k in ("solo", "recovery", "blind") if k in s.by_ask_style}
        rows.append({"label": s.label, "expert_calls": s.expert_calls, "per_episode": s.expert_calls / n,
                     "nudges": s.nudges, "followed_by_ask": s.nudges_followed_by_ask,
                     "styles": "; ".join(f"{k} {t.complete}/{t.accountable} complete" for k, t in styles.items())
                     or NA})
    return rows


def format_error_kinds(runs: Sequence[RunData]) -> list[str]:
    totals: dict[str, int] = defaultdict(int)
    for s in all_series(runs):
        for kind, count in s.format_errors.items():
            totals[kind] += count
    return [k for k, _ in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])) if totals[k]]


def group_rows(runs: Sequence[RunData]) -> list[dict[str, Any]]:
    """One row per series and step of a GRPO group run, from the records (the summary's curriculum besides)."""
    rows = []
    for s in all_series(runs):
        steps = sorted({step for step, _, _ in s.steps})
        for step in steps:
            cells = {(kind): t for (st, _, kind), t in s.steps.items() if st == step}
            phase = next(p for st, p, _ in s.steps if st == step)
            episodes = sum(t.episodes for t in cells.values())
            accountable = sum(t.accountable for t in cells.values())
            rows.append({
                "label": s.label, "step": step, "phase": phase, "episodes": episodes,
                "expert_members": cells["expert"].episodes if "expert" in cells else 0,
                "solo_members": cells["solo"].episodes if "solo" in cells else 0,
                "mean_reward": sum(t.reward_sum for t in cells.values()) / episodes if episodes else None,
                "completion": sum(t.complete for t in cells.values()) / accountable if accountable else None,
                "format_error_rate": s.step_format_errors[step] / episodes if episodes else None,
                "groups": len(s.step_groups.get(step, ())),
                "incomplete_groups": len(s.step_incomplete_groups.get(step, ())),
            })
    return rows


def config_rows(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    """The run's resolved config as (key, value) text, unset keys left out."""
    import json

    config = manifest.get("config") or {}
    rows = []
    for key, value in config.items():
        if value is None or value == [] or value == {}:
            continue
        if key == "arms" and isinstance(value, list):
            value = [{k: v for k, v in arm.items() if v is not None} for arm in value if isinstance(arm, dict)]
        rows.append((str(key), value if isinstance(value, str) else json.dumps(value)))
    return rows
