"""assemble: one token sequence per episode in which every generated token keeps its exact context."""

from __future__ import annotations

import pytest

from awm_runtime.integrations._sequence import Turn, assemble, common_prefix


def test_turns_whose_prompts_extend_each_other_concatenate_exactly() -> None:
    p1, g1 = [1, 2, 3], [10, 11, 2]
    p2 = [*p1, *g1, 4, 5]  # + the tool result
    g2 = [12, 2]
    seq = assemble([Turn(p1, g1, [-0.1, -0.2, -0.3]), Turn(p2, g2, [-0.4, -0.5])])
    assert seq.prompt_ids == p1
    assert seq.completion_ids == [10, 11, 2, 4, 5, 12, 2]
    assert seq.env_mask == [1, 1, 1, 0, 0, 1, 1]
    assert seq.logprobs == [-0.1, -0.2, -0.3, 0.0, 0.0, -0.4, -0.5]
    assert seq.prompt_ids + seq.completion_ids == [*p2, *g2]  # the last turn's full context, then its tokens
    assert (seq.turns_used, seq.turns_dropped, seq.tokens_reread, seq.sampled_logprobs) == (2, 0, 0, True)


def test_a_generated_tail_read_back_differently_is_replaced_by_the_engines_tokens() -> None:
    p1, g1 = [1, 2], [10, 11, 12]
    p2 = [1, 2, 10, 99, 2, 4]  # the engine re-tokenised "11 12" as "99" and closed the turn
    seq = assemble([Turn(p1, g1, None), Turn(p2, [13], None)])
    assert seq.prompt_ids + seq.completion_ids == [*p2, 13]
    assert seq.env_mask == [1, 0, 0, 0, 1]
    assert seq.tokens_reread == 2 and not seq.sampled_logprobs


def test_a_template_that_rewrites_earlier_turns_ends_the_sequence_before_them() -> None:
    p1, g1 = [1, 2, 3], [10, 2]
    p2 = [1, 7, 3, 10, 2, 4]  # the system part changed: turn 2 saw a different history
    seq = assemble([Turn(p1, g1, None), Turn(p2, [11], None), Turn([*p2, 11, 5], [12], None)])
    assert seq.completion_ids == g1 and seq.env_mask == [1, 1]
    assert (seq.turns_used, seq.turns_dropped) == (1, 2)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="no policy turn"):
        assemble([])
    with pytest.raises(ValueError, match="2 logprobs for 3"):
        assemble([Turn([1], [1, 2, 3], [0.0, 0.0])])
    assert common_prefix([1, 2, 3], [1, 2]) == 2 and common_prefix([], [1]) == 0
