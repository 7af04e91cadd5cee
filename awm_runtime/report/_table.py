"""The end-of-run summary table (rich): one column per arm, so it fits a narrow terminal."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Group
from rich.table import Table

from awm_runtime.report._exact import fmt_log10
from awm_runtime.report._stopping import sequential_text

__all__ = ["comparison_heading", "economics_table", "p_cell", "paired_table", "sequential_text", "summary_table",
           "usd"]


def _who(ref: dict[str, Any] | None) -> str:
    if not ref:
        return "none"
    label = str(ref.get("alias") or ref.get("model", "?"))
    return f"{label} [yellow](simulated)[/]" if ref.get("simulated") else label


def _expert(a: dict[str, Any]) -> str:
    """The expert the arm's episodes used; with how many of them when only some did (a GRPO group's members)."""
    used = a.get("expert_episodes") or {}
    if len(used) > 1:
        return ", ".join(f"{k} ({v} of {a['episodes']})" for k, v in used.items())
    n = sum(used.values())
    return _who(a.get("expert")) + (f" ({n} of {a['episodes']} episodes)" if used and n < a["episodes"] else "")


AGENT_ENDS = ("max_turns", "timeout", "context_overflow", "content_filter", "verifier_raised")
INFRA_ENDS = ("model_error", "world_error", "verifier_error", "judge_error", "runtime_error")


def _breakdown(a: dict[str, Any], reasons: tuple[str, ...]) -> str:
    ends = a.get("end_reasons") or {}
    parts = [f"{ends[r]} {r}" for r in reasons if ends.get(r)]
    return f" ({', '.join(parts)})" if parts else ""


def _incomplete(a: dict[str, Any]) -> str:
    return f"{a['outcomes'].get('incomplete', 0)}{_breakdown(a, AGENT_ENDS)}"


def _infra(a: dict[str, Any]) -> str:
    return f"{a['infra_errors']}{_breakdown(a, INFRA_ENDS)}"


def _pct(x: Any, n: Any) -> str:
    return f"{x:.1%} of {n}" if isinstance(x, int | float) else f"n/a (0 of {n})"


def _num(x: Any, fmt: str = ".3f") -> str:
    return format(x, fmt) if isinstance(x, int | float) else "n/a"


def _successes_by_style(a: dict[str, Any]) -> str:
    """Completed episodes by how they asked (README): solo, recovery (asked after trouble), blind."""
    styles = a.get("successes_by_ask_style") or {}
    return "/".join(str(styles.get(k, 0)) for k in ("solo", "recovery", "blind"))


ROWS: list[tuple[str, Any]] = [
    ("policy", lambda a: _who(a["policy"])),
    ("expert", lambda a: _expert(a)),
    ("episodes", lambda a: str(a["episodes"])),
    ("completion", lambda a: _pct(a["completion_rate"], a["accountable_episodes"])),
    ("strict completion", lambda a: _pct(a["strict_completion_rate"], a["episodes"])),
    ("incomplete", lambda a: _incomplete(a)),
    ("format errors", lambda a: f"{a['format_error_total']} in {a['episodes_with_format_errors']} episodes"),
    ("infra errors", lambda a: _infra(a)),
    ("expert calls", lambda a: str(a["expert_calls"])),
    ("nudges", lambda a: f"{a['nudges']} ({a['nudges_followed_by_ask']} then asked)"),
    ("successes solo/recovery/blind", lambda a: _successes_by_style(a)),
    ("mean reward", lambda a: _num(a["mean_reward"])),
]


def summary_table(summary: dict[str, Any]) -> Table:
    arms = list(summary["arms"].values())
    table = Table(title="awm-run summary", title_justify="left")
    table.add_column("")
    for arm in arms:
        table.add_column(arm["arm"], justify="right")
    for label, cell in ROWS:
        table.add_row(label, *(cell(a) for a in arms))
    if any(a.get("fork_prefix") for a in arms):  # fork runs: the counts above are the continuations' only
        table.add_row("fork prefix: expert calls / nudges", *(
            f"{(a.get('fork_prefix') or {}).get('expert_calls', 0)} / {(a.get('fork_prefix') or {}).get('nudges', 0)}"
            for a in arms))
    return table


def usd(e: dict[str, Any], key: str) -> str:
    """A cost cell: dollars, or why there is no number (unknown price, no completed task); never $0."""
    value = e.get(key)
    if isinstance(value, int | float):
        return f"${value:.4g}"
    return "unknown" if not e.get("cost_known", False) else "n/a"


def seconds(h: dict[str, Any] | None) -> str:
    """`p50 / p95` of a latency summary, in seconds."""
    if not h or h.get("p50_s") is None:
        return "n/a"
    return f"{h['p50_s']:.2g} / {h['p95_s']:.2g}"


ECONOMICS: list[tuple[str, Any]] = [
    ("USD per completed task", lambda e: usd(e, "usd_per_completed_task")),
    ("USD total", lambda e: usd(e, "cost_usd")),
    ("tokens per episode", lambda e: _num(e.get("tokens_per_episode"), ",.0f")),
    ("output tokens per episode", lambda e: _num(e.get("output_tokens_per_episode"), ",.0f")),
    ("  of which reasoning", lambda e: _num(e.get("reasoning_tokens_per_episode"), ",.0f")
     if e.get("reasoning_tokens_per_episode") is not None else "not reported"),
    ("policy call p50 / p95 s", lambda e: seconds((e["model_calls"].get("policy") or {}).get("latency"))),
    ("expert call p50 / p95 s", lambda e: seconds((e["model_calls"].get("expert") or {}).get("latency"))),
    ("episode wall p50 / p95 s", lambda e: seconds(e.get("episode_wall"))),
    ("retries per 100 calls", lambda e: " / ".join(f"{r} {c['retries_per_100_calls']:g}"
                                                   for r, c in e["model_calls"].items()) or "n/a"),
    ("model errors (episodes)", lambda e: str(e.get("model_errors", 0))),
]


def economics_table(summary: dict[str, Any]) -> Table:
    """Provider economics per arm: cost per completed task, tokens, latencies, retries, model errors."""
    arms = [a for a in summary["arms"].values() if a.get("economics")]
    table = Table(title="provider economics (p50 / p95)", title_justify="left",
                  caption="unknown: a model without a price (set input/output_cost_per_mtok in awm.toml)",
                  caption_justify="left")
    table.add_column("")
    for arm in arms:
        table.add_column(arm["arm"], justify="right")
    for label, cell in ECONOMICS:
        table.add_row(label, *(cell(a["economics"]) for a in arms))
    return table


def comparison_heading(c: dict[str, Any]) -> str:
    """How a comparison was paired: pairs used, missing in either arm, duplicates, infra-error pairs."""
    delta = f"Δ = {c['b']} − {c['a']}"
    if c.get("design") == "unpaired":
        return (f"{c['a']} → {c['b']} ({delta}): UNPAIRED ({c.get('design_note')}); episodes {c.get('episodes_a')} / "
                f"{c.get('episodes_b')}")
    return (f"{c['a']} → {c['b']} ({delta}): {c.get('pairs', 0)} pairs used ({c.get('tasks')} tasks), "
            f"{c.get('pairs_with_infra_error', 0)} with an infra error (strict only); missing: "
            f"{c.get('pairs_missing_in_a', 0)} in {c['a']}, {c.get('pairs_missing_in_b', 0)} in {c['b']}; "
            f"duplicates: {c.get('duplicates_a', 0) + c.get('duplicates_b', 0)}")


def p_cell(c: dict[str, Any], metric: str) -> str:
    """A p-value as it prints: exact or marked, with the smallest attainable p when it is above 0.001."""
    text = c.get(f"{metric}_p_text") or _pvalue(c.get(f"{metric}_p"))
    floor = c.get(f"{metric}_p_min")
    if isinstance(floor, int | float) and floor > 0.001:
        text += f" (smallest possible {floor:.3g})"
    return text


def paired_table(summary: dict[str, Any], title: str = "paired comparison") -> Group | None:
    """Arm against arm (b minus a, b the later --arm; across runs, the later run's): one small table per
    comparison, titled with how it was paired; None with one arm."""
    comparisons = summary.get("paired") or []
    if not comparisons:
        return None

    def ci(value: Any, bounds: Any) -> str:
        if value is None:
            return "n/a"
        return f"{value:+.3f}" + (f" [{bounds[0]:+.3f}, {bounds[1]:+.3f}]" if bounds else "")

    tables = []
    for n, c in enumerate(comparisons):
        last = n == len(comparisons) - 1
        notes = [str(c[k]) for k in ("p_values", "table_pairs_note") if c.get(k)]
        caption = "\n".join(notes + ([PAIRED_CAPTION] if last else [])) or None
        table = Table(title=f"{title} {comparison_heading(c)}", title_justify="left",
                      caption=caption, caption_justify="left")
        for col in ("measure", "Δ (b − a) [95% CI]", "p", "Holm p", "test"):
            table.add_column(col, justify="left" if col in ("measure", "test") else "right")
        for label, metric, diff in (("completion (accountable)", "completion", "completion_diff"),
                                    ("completion (strict)", "strict_completion", "strict_completion_diff"),
                                    ("reward (accountable)", "reward", "reward_diff")):
            table.add_row(label, ci(c.get(diff), c.get(f"{diff}_ci95")), p_cell(c, metric),
                          c.get(f"{metric}_p_holm_text") or _pvalue(c.get(f"{metric}_p_holm")),
                          str(c.get(f"{metric}_test") or "n/a"))
        if c.get("strict_disagrees"):
            table.add_row("[yellow]strict and accountable disagree: infra errors depend on the arm[/]", "", "", "",
                          "")
        tables.append(table)
    return Group(*tables)


PAIRED_CAPTION = ("Δ = b − a: b is the later --arm (across runs, the later RUN). "
                  "Pairs: the same task, repeat and seed. Accountable: pairs with an infrastructure error left out; "
                  "strict: they count as failures. p: exact unless marked Monte Carlo (with its draws). Holm: "
                  "across the arm pairs, per metric. CIs: bootstrap over tasks.")


def _pvalue(value: float | None) -> str:
    if value is None:
        return "n/a"
    return fmt_log10(math.log10(value)) if value > 0 else "n/a"
