"""The end-of-run summary table (rich): one column per arm, so it fits a narrow terminal."""

from __future__ import annotations

from typing import Any

from rich.table import Table


def _who(ref: dict[str, Any] | None) -> str:
    if not ref:
        return "none"
    label = str(ref.get("alias") or ref.get("model", "?"))
    return f"{label} [yellow](simulated)[/]" if ref.get("simulated") else label


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


def _successes_by_style(a: dict[str, Any]) -> str:
    """Completed episodes by how they asked (README): solo, recovery (asked after trouble), blind."""
    styles = a.get("successes_by_ask_style") or {}
    return "/".join(str(styles.get(k, 0)) for k in ("solo", "recovery", "blind"))


ROWS: list[tuple[str, Any]] = [
    ("policy", lambda a: _who(a["policy"])),
    ("expert", lambda a: _who(a["expert"])),
    ("episodes", lambda a: str(a["episodes"])),
    ("completion", lambda a: f"{a['completion_rate']:.1%} of {a['accountable_episodes']}"),
    ("strict completion", lambda a: f"{a['strict_completion_rate']:.1%} of {a['episodes']}"),
    ("incomplete", lambda a: _incomplete(a)),
    ("format errors", lambda a: f"{a['format_error_total']} in {a['episodes_with_format_errors']} episodes"),
    ("infra errors", lambda a: _infra(a)),
    ("expert calls", lambda a: str(a["expert_calls"])),
    ("nudges", lambda a: f"{a['nudges']} ({a['nudges_followed_by_ask']} then asked)"),
    ("successes solo/recovery/blind", lambda a: _successes_by_style(a)),
    ("mean reward", lambda a: f"{a['mean_reward']:.3f}"),
]


def summary_table(summary: dict[str, Any]) -> Table:
    arms = list(summary["arms"].values())
    table = Table(title="awm-run summary", title_justify="left")
    table.add_column("")
    for arm in arms:
        table.add_column(arm["arm"], justify="right")
    for label, cell in ROWS:
        table.add_row(label, *(cell(a) for a in arms))
    return table


def paired_table(summary: dict[str, Any]) -> Table | None:
    """Arm against arm on the same tasks, repeats and seeds (b minus a), or None with one arm."""
    comparisons = summary.get("paired") or []
    if not comparisons:
        return None
    table = Table(title="paired comparison (same task, repeat and seed; b - a)", title_justify="left",
                  caption=PAIRED_CAPTION, caption_justify="left")
    for col in ("a → b", "pairs (tasks)", "only a / only b", "completion Δ [95% CI]", "p / Holm",
                "reward Δ [95% CI]", "p / Holm"):
        table.add_column(col, justify="left" if col == "a → b" else "right")

    def ci(value: Any, bounds: Any) -> str:
        if value is None:
            return "–"
        return f"{value:+.3f}" + (f" [{bounds[0]:+.3f}, {bounds[1]:+.3f}]" if bounds else "")

    def p(value: float | None, adjusted: float | None, test: str = "") -> str:
        if value is None:
            return "–"
        mark = "ᴹ" if test == "mcnemar_exact" else ""
        return f"{_pvalue(value)}{mark} / {_pvalue(adjusted)}"

    for c in comparisons:
        table.add_row(f"{c['a']} → {c['b']}", f"{c['pairs']} ({c['tasks']})",
                      f"{c['only_a_complete']} / {c['only_b_complete']}",
                      ci(c["completion_diff"], c["completion_diff_ci95"]),
                      p(c["completion_p"], c["completion_p_holm"], c["completion_test"]),
                      ci(c["reward_diff"], c["reward_diff_ci95"]), p(c["reward_p"], c["reward_p_holm"]))
    return table


PAIRED_CAPTION = ("p: ᴹ exact McNemar (one pair per task), else sign-flip permutation over tasks; Holm across "
                  "the arm pairs, per metric. CIs: bootstrap over tasks. Pairs with an infrastructure error are "
                  "left out.")


def _pvalue(value: float | None) -> str:
    if value is None:
        return "–"
    return "<1e-6" if value < 1e-6 else f"{value:.3g}"
