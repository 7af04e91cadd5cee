"""The end-of-run summary table (rich): one column per arm, so it fits a narrow terminal."""

from __future__ import annotations

from typing import Any

from rich.table import Table


def _who(ref: dict[str, Any] | None) -> str:
    if not ref:
        return "none"
    label = str(ref.get("alias") or ref.get("model", "?"))
    return f"{label} [yellow](simulated)[/]" if ref.get("simulated") else label


ROWS: list[tuple[str, Any]] = [
    ("policy", lambda a: _who(a["policy"])),
    ("expert", lambda a: _who(a["expert"])),
    ("episodes", lambda a: str(a["episodes"])),
    ("completion", lambda a: f"{a['completion_rate']:.1%} of {a['scored_episodes']}"),
    ("incomplete", lambda a: str(a["outcomes"].get("incomplete", 0))),
    ("format errors", lambda a: f"{a['format_error_total']} in {a['episodes_with_format_errors']} episodes"),
    ("infra errors", lambda a: str(a["outcomes"].get("error", 0))),
    ("expert calls", lambda a: str(a["expert_calls"])),
    ("nudges", lambda a: f"{a['nudges']} ({a['nudges_followed_by_ask']} then asked)"),
    ("solo/recovery/blind", lambda a: "/".join(str(a["ask_styles"].get(k, 0)) for k in ("solo", "recovery", "blind"))),
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
    table = Table(title="paired comparison (same task, repeat and seed; b - a)", title_justify="left")
    for col in ("a → b", "pairs", "only a / only b", "completion Δ [95% CI]", "McNemar p", "reward Δ [95% CI]"):
        table.add_column(col, justify="left" if col == "a → b" else "right")

    def ci(value: Any, bounds: Any) -> str:
        if value is None:
            return "–"
        return f"{value:+.3f}" + (f" [{bounds[0]:+.3f}, {bounds[1]:+.3f}]" if bounds else "")

    for c in comparisons:
        table.add_row(f"{c['a']} → {c['b']}", str(c["pairs"]), f"{c['only_a_complete']} / {c['only_b_complete']}",
                      ci(c["completion_diff"], c["completion_diff_ci95"]),
                      "<1e-6" if c["mcnemar_p"] < 1e-6 else f"{c['mcnemar_p']:.3g}",
                      ci(c["reward_diff"], c["reward_diff_ci95"]))
    return table
