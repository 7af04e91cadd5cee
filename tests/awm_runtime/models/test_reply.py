"""Usage as it enters from a provider's reply (models/_reply.py): whole, non-negative, believable counts only."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from awm_runtime.models._reply import MAX_TOKENS_PER_CALL, parse_usage


def test_good_counts_pass_and_missing_ones_are_none() -> None:
    usage, problem = parse_usage(SimpleNamespace(prompt_tokens=120, completion_tokens=7.0))
    assert problem is None and (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (1, 120, 7)
    usage, problem = parse_usage(None)
    assert problem is None and (usage.prompt_tokens, usage.completion_tokens) == (0, 0)
    usage, problem = parse_usage(SimpleNamespace(prompt_tokens="42", completion_tokens=MAX_TOKENS_PER_CALL))
    assert problem is None and usage.prompt_tokens == 42


@pytest.mark.parametrize(("raw", "says"), [
    ({"prompt_tokens": -5}, "usage.prompt_tokens = -5 is negative"),
    ({"completion_tokens": 2.5}, "usage.completion_tokens = 2.5 is not a whole number"),
    ({"prompt_tokens": "lots"}, "usage.prompt_tokens = 'lots' is not a number"),
    ({"prompt_tokens": True}, "usage.prompt_tokens = True is not a number"),
    ({"prompt_tokens": [1]}, "usage.prompt_tokens = [1] is not a number"),
    ({"completion_tokens": float("nan")}, "usage.completion_tokens = nan is not a whole number"),
    ({"completion_tokens": MAX_TOKENS_PER_CALL + 1}, "is more than any context holds"),
])
def test_bad_counts_are_the_providers_error_and_count_as_none(raw: dict[str, object], says: str) -> None:
    usage, problem = parse_usage(SimpleNamespace(**{"prompt_tokens": 10, "completion_tokens": 10, **raw}))
    assert problem is not None and says in problem
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (1, 0, 0)
