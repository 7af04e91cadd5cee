"""The report's A/B sections: paired differences (accountable and strict) and provider economics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from awm_runtime.report import _sections as sec
from awm_runtime.report._collect import RunData, Series
from awm_runtime.report._markup import esc, figure, note, section, table
from awm_runtime.report._table import comparison_heading, seconds, usd

FOREST_CAPTION = ("Each comparison: per-scenario differences (squares, 95% task-clustered bootstrap), the overall "
                  "accountable difference and the strict one (infrastructure errors counted as failures) as "
                  "diamonds, each with its p-value and test. ≠ accountable: the strict view disagrees.")


def _metric_rows(c: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for label, metric, diff in (("completion (accountable)", "completion", "completion_diff"),
                                ("completion (strict)", "strict_completion", "strict_completion_diff"),
                                ("reward (accountable)", "reward", "reward_diff")):
        rows.append([label, sec.fmt_signed(c.get(diff), c.get(f"{diff}_ci95")), sec.p_text(c, metric),
                     sec.holm_text(c, metric)])
    return rows


def _comparison(c: dict[str, Any], table_id: str) -> str:
    head = f"<h4>{esc(comparison_heading(c))}</h4>"
    if c.get("design") == "unpaired":
        head += '<p class="warn">Unpaired: the two arms share no (task, repeat, seed) — runs with different ' \
                "--seed. The tests treat the arms as independent samples (Fisher exact; permutation of means).</p>"
    counts = ""
    if c.get("design") != "unpaired":
        counts = note(f"Accountable: {c.get('pairs', 0)} pairs, {c.get('only_a_complete')} complete only in "
                      f"{c['a']}, {c.get('only_b_complete')} only in {c['b']}. Strict: {c.get('strict_pairs', 0)} "
                      f"pairs, {c.get('strict_only_a_complete')} / {c.get('strict_only_b_complete')}.")
    for key in ("p_values", "table_pairs_note"):
        if c.get(key):
            counts += f'<p class="warn">{esc(str(c[key]))}</p>' if key == "p_values" else note(str(c[key]))
    flag = ""
    if c.get("strict_disagrees"):
        flag = ('<p class="warn">Strict and accountable disagree: infrastructure errors depend on the arm, so '
                "leaving those pairs out may bias the accountable comparison.</p>")
    return head + table(["measure", "Δ (b − a) [95% CI]", "p (test)", "Holm p"], _metric_rows(c),
                        table_id=table_id) + counts + flag


def paired_section(runs: Sequence[RunData], comparison: dict[str, Any] | None) -> str:
    """Per run (and across runs): each comparison's table, then one forest plot with the method as its caption."""
    from awm_runtime.report import _plots

    parts = []
    sources = [(run.label if len(runs) > 1 else "", "fig-forest" if len(runs) == 1 else f"fig-forest-{i}",
                run.stats, dict(run.series))  # a run's own comparisons name its arms
               for i, run in enumerate(runs) if len(run.series) > 1]
    if comparison is not None:
        every = {s.label: s for run in runs for s in run.series.values()}
        sources.append(("runs compared on shared tasks (Δ = later RUN − earlier RUN)", "fig-forest-runs", comparison,
                        every))
    for title, fig_id, stats, series in sources:
        comparisons = [c for c in stats.get("paired") or [] if isinstance(c, dict)]
        if not comparisons:
            continue
        method = sec.comparison_method(comparisons, stats)
        completion, reward = sec.forest_rows(comparisons, series)
        png = _plots.forest([("completion Δ (b − a)", completion), ("reward Δ (b − a)", reward)])
        heading = f"<h3>{esc(title)}</h3>" if title else ""
        tables = "".join(_comparison(c, f"table-{fig_id[4:]}-{i}") for i, c in enumerate(comparisons))
        parts.append(heading + tables + figure(fig_id, png, f"Forest plot of paired differences ({title or 'arms'})",
                                               f"{FOREST_CAPTION} Method: {method}"))
    if not parts:
        grouped = any(s.steps for run in runs for s in run.series.values())
        return section("paired", "Paired differences", note(
            "One arm only: there is nothing to pair." + (" A GRPO group mixes members with and without the expert "
                                                         "within its arm: see the groups section." if grouped else "")))
    return section("paired", "Paired differences", *parts)


def _economics_of(runs: Sequence[RunData], s: Series) -> dict[str, Any]:
    return dict(sec.arm_stats(runs, s).get("economics") or {})


def economics_section(runs: Sequence[RunData]) -> str:
    """Cost per completed task, tokens, latencies, retries and errors per arm; endpoints."""
    from awm_runtime.report import _plots

    series = sec.all_series(runs)
    econ = [_economics_of(runs, s) for s in series]
    rows = []
    for s, e in zip(series, econ, strict=True):
        calls = e.get("model_calls") or {}
        rows.append([s.label, usd(e, "usd_per_completed_task"),
                     usd(e, "cost_usd"), sec.fmt_num(e.get("tokens_per_episode"), 0),
                     seconds((calls.get("policy") or {}).get("latency")),
                     seconds((calls.get("expert") or {}).get("latency")), seconds(e.get("episode_wall")),
                     " / ".join(f"{r} {c.get('retries_per_100_calls', 0):g}" for r, c in calls.items()) or sec.NA,
                     e.get("model_errors", 0), sec.fmt_num(e.get("output_tokens_per_episode"), 0),
                     sec.fmt_num(e.get("reasoning_tokens_per_episode"), 0)
                     if e.get("reasoning_tokens_per_episode") is not None else "not reported"])
    body = table(["arm", "USD per completed task", "USD total", "tokens per episode", "policy call p50 / p95 (s)",
                  "expert call p50 / p95 (s)", "episode wall p50 / p95 (s)", "retries per 100 calls",
                  "model errors", "output tokens per episode", "of which reasoning"], rows,
                 table_id="table-economics")
    unknown = [f"{s.label}: {e.get('cost_note')}" for s, e in zip(series, econ, strict=True)
               if e and not e.get("cost_known")]
    notes = note("Cost is unknown (never shown as zero dollars) where a model has no price — " + "; ".join(unknown) +
                 ". Set input_cost_per_mtok and output_cost_per_mtok for it in awm.toml.") if unknown else ""
    short = ["unknown price" if not e.get("cost_known") else "no completed task" for e in econ]
    png = _plots.economics(series, [e.get("usd_per_completed_task") for e in econ], short)
    parts = [body, notes, figure("fig-economics", png, "Cost per completed task and latency distributions per arm",
                                 "Cost per completed task: the arm's whole spend over its completed episodes. "
                                 "Latency: each answered policy model call (retries not included), and each "
                                 "episode's wall time, log scale. p50 / p95 in the table are within 2%.")]
    for run in runs:
        endpoints = run.summary_file.get("endpoints") or []
        if endpoints:
            parts.append(f"<h3>Endpoints{esc(' of ' + run.label) if len(runs) > 1 else ''}</h3>" + table(
                ["endpoint", "roles", "calls", "failed attempts", "retries", "429s", "failed per 100 calls"],
                [[e.get("endpoint"), ", ".join(e.get("roles") or []), e.get("calls"), e.get("failed_attempts"),
                  e.get("retries"), e.get("rate_limited"), sec.fmt_num(e.get("failed_per_100_calls"), 2)]
                 for e in endpoints], table_id="table-endpoints"))
    return section("economics", "Provider economics", *parts)
