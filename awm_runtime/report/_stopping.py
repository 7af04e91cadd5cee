"""Reporting a run that stopped under `--until-decided`: the sequential result leads, fixed-sample p-values go.

A run that stops *because of* its data (optional stopping) voids a fixed-sample p-value computed on that
data: it was not designed for a sample size chosen by the result. What stays valid is the sequential
test's own result: its e-value E, the anytime-valid p = min(1, 1/E) (Ville's inequality), and its
confidence sequence. So every comparison of such a run keeps its differences and intervals (descriptive)
but loses its p-values, replaced by a note saying why; the sequential result is what a reader reads
first, with both pair counts explained: the pairs the decision used (discordant ones) and the pairs in
the table (every pair recorded, concordant ones and those that finished after the stop included).
"""

from __future__ import annotations

from typing import Any

NOT_VALID = "not valid after optional stopping"
P_VOIDED = (f"{NOT_VALID}: the run stopped under --until-decided, so a fixed-sample p-value is not valid; "
            "read the sequential result (e-value, anytime-valid p, confidence sequence)")
VOID_TEST = "none after optional stopping"
METRICS = ("completion", "strict_completion", "reward")
P_SUFFIXES = ("_p", "_p_log10", "_p_computed", "_p_draws", "_p_min", "_p_holm")


def anytime_p(seq: dict[str, Any]) -> float | None:
    """The anytime-valid p-value of the sequential test: min(1, 1/E)."""
    e = seq.get("e_value")
    if not isinstance(e, int | float) or e <= 0:
        return None
    return float(f"{min(1.0, 1.0 / e):.4g}")


def completion_diff_interval(seq: dict[str, Any]) -> list[float] | None:
    """The completion difference (later − earlier arm) the confidence sequence for theta implies on the pairs
    the test saw: Δ = D (2θ − 1), D the share of those pairs (infra errors left out) that were discordant."""
    theta = seq.get("theta_interval")
    pairs = int(seq.get("pairs") or 0) - int(seq.get("pairs_with_infra_error") or 0)
    if not (isinstance(theta, list | tuple) and len(theta) == 2) or pairs <= 0:
        return None
    share = int(seq.get("discordant_pairs") or 0) / pairs
    return [round(share * (2 * float(theta[0]) - 1), 4), round(share * (2 * float(theta[1]) - 1), 4)]


def sequential_fields(seq: dict[str, Any]) -> dict[str, Any]:
    """The fields a report adds to summary.json's `sequential` (computed from the ones the rule wrote)."""
    return {"p_anytime": anytime_p(seq), "p_anytime_note": "anytime-valid p = min(1, 1/e_value): valid however "
            "the run stopped", "completion_diff_interval": completion_diff_interval(seq),
            "completion_diff_note": "completion difference (later − earlier arm) implied on the test's pairs by "
            "the confidence sequence for theta, at the discordance seen"}


def void_p_values(comparison: dict[str, Any]) -> None:
    """Take a comparison's fixed-sample p-values out (in place), each replaced by the reason."""
    for metric in METRICS:
        for suffix in P_SUFFIXES:
            comparison.pop(f"{metric}{suffix}", None)
        comparison[f"{metric}_p"] = None
        comparison[f"{metric}_p_text"] = NOT_VALID
        comparison[f"{metric}_p_holm_text"] = NOT_VALID
        comparison[f"{metric}_test"] = VOID_TEST
    comparison["p_values"] = P_VOIDED


def apply_stopping(stats: dict[str, Any], seq: dict[str, Any] | None, arms: set[str] | None = None) -> None:
    """Mark a summary (in place) of a run stopped under --until-decided: `sequential` completed with the
    anytime-valid p and the implied completion-difference interval; every comparison (of `arms`, when given:
    the arms that ran under the test) voided of its fixed-sample p-values."""
    if not isinstance(seq, dict):
        return
    stats["sequential"] = {**seq, **sequential_fields(seq)}
    for c in stats.get("paired") or []:
        if isinstance(c, dict) and (arms is None or c.get("a") in arms or c.get("b") in arms):
            void_p_values(c)
            c["table_pairs_note"] = pair_counts_text(seq, c)


def pair_counts_text(seq: dict[str, Any], c: dict[str, Any] | None) -> str:
    """Why the decision's pair count and the table's differ."""
    used, seen = seq.get("discordant_pairs"), seq.get("pairs")
    text = (f"The decision used {used} discordant pairs of the {seen} it saw (a concordant pair says nothing "
            f"about which arm is better; {seq.get('pairs_with_infra_error', 0)} with an infra error not counted)")
    if c is not None and c.get("design") != "unpaired":
        text += (f"; the table counts {c.get('pairs', 0)} pairs: every pair recorded, concordant ones and those "
                 "that finished after the stop included")
    return text + "."


def _n(x: Any, fmt: str) -> str:
    return format(x, fmt) if isinstance(x, int | float) else "unknown"


def sequential_text(seq: dict[str, Any], comparison: dict[str, Any] | None = None) -> str:
    """The sequential result of an --until-decided run, as the report leads with it: why it stopped, the
    e-value, the anytime-valid p, the confidence sequences, and both pair counts explained."""
    lo, hi = seq.get("theta_interval") or (None, None)
    verdict = "decided" if seq.get("decided") else "not decided"
    reason = str(seq.get("stop_reason") or "").removeprefix("decided: ").removesuffix(": not decided")
    p = seq.get("p_anytime", anytime_p(seq))
    diff = seq.get("completion_diff_interval", completion_diff_interval(seq))
    diff_text = f"[{diff[0]:+.3f}, {diff[1]:+.3f}]" if diff else "n/a"
    return (f"until-decided: {verdict} ({reason}). Sequential result, valid after the early stop: e-value "
            f"{_n(seq.get('e_value'), '.4g')} (threshold {_n(seq.get('threshold'), 'g')} = 1/alpha), anytime-valid "
            f"p = min(1, 1/E) = {_n(p, '.3g')}; {seq.get('interval_note')}: [{lo}, {hi}]; completion difference "
            f"(later − earlier arm) on those pairs: {diff_text}. {pair_counts_text(seq, comparison)} "
            f"Fixed-sample p-values are {NOT_VALID} and are not shown. Test: {seq.get('test')}.")
