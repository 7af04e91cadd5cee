"""awm-export's reasons for exporting nothing: each names what is missing and what would give rows."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from awm_runtime.cli._export import why_empty
from awm_runtime.export import ExportStats

RUN = Path("/runs/a")


def stats(records: int, **skipped: int) -> ExportStats:
    return ExportStats(records=records, skipped=Counter({k.replace("_", " "): v for k, v in skipped.items()}))


def test_no_records_names_the_arms_asked_for() -> None:
    assert why_empty("atif", stats(0), RUN, ["x", "y"]) == ("/runs/a has no episode records of arm x, y: nothing to "
                                                            "export as atif")
    assert why_empty("sft", stats(0), RUN, None) == "/runs/a has no episode records: nothing to export as sft"


def test_each_format_says_what_it_needs() -> None:
    assert "run awm-run with --group-size G" in why_empty("grpo", stats(3, not_in_a_group=3), RUN, None)
    assert "is not a fork run" in why_empty("fork-pairs", stats(3), RUN, None)
    zero = ExportStats(records=3, skipped=Counter({"a forked state without both an ask and a solo continuation": 0}))
    assert "is not a fork run" in why_empty("ask-labels", zero, RUN, None)  # a count of 0 is no reason
    both = why_empty("ask-labels", stats(4, nope=2), RUN, None)
    assert both == "no forked state of /runs/a has both an ask and a solo continuation (2 nope): fork with --arm ask " \
                   "--arm solo"
    assert "no episode asked an expert" in why_empty("pairs", stats(3), RUN, None)
    assert why_empty("pairs", stats(3, the_advised_action_did_no_better=2), RUN, None) == (
        "no episode of /runs/a gives a pairs row (2 the advised action did no better)")
    assert why_empty("sft", stats(2, outcome_incomplete=2), RUN, None).endswith(
        "(2 outcome incomplete); --outcomes chooses which outcomes to keep")
    assert why_empty("sft", stats(2, no_policy_reply=2), RUN, None) == (
        "no episode of /runs/a is usable as sft (2 no policy reply)")
