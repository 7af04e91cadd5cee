"""One multi-turn episode as one token sequence: the policy's generated tokens between the engine's prompt tokens.

Each policy turn t has the prompt the serving engine tokenised (P_t) and the ids it generated (G_t).
The episode becomes `prompt_ids = P_1` and `completion_ids = G_1 D_2 G_2 D_3 G_3 ...`, where D_t is
what P_t adds after P_{t-1} G_{t-1}: the chat template's turn markers, tool results, expert advice,
nudges (env_mask 0). The invariant a trainer needs: every token with mask 1 is preceded in the
sequence by exactly the tokens the engine conditioned it on, so its logprob is the sampling logprob.

Templates do not always re-render the past as it was generated. When P_t departs from P_{t-1} G_{t-1}
inside G_{t-1} (a generated text that tokenises differently when read back), the tail of G_{t-1}
from that point is replaced by P_t's own tokens, masked 0. When it departs earlier (a template that
rewrites history, e.g. one that drops earlier reasoning), no single sequence can hold both turns:
the sequence stops before turn t, and `turns_dropped` says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Turn:
    prompt_ids: list[int]          # the whole prompt of this turn, as the serving engine tokenised it
    completion_ids: list[int]      # what it generated, as it generated it
    logprobs: list[float] | None   # one per completion id, or None


@dataclass(slots=True)
class TokenSequence:
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    turns_used: int = 0
    turns_dropped: int = 0
    tokens_reread: int = 0  # generated tokens replaced by the engine's re-reading of them (masked 0)
    sampled_logprobs: bool = True  # every generated token came with the engine's logprob

    def extend(self, ids: list[int], mask: int, logprobs: list[float] | None = None) -> None:
        self.completion_ids += ids
        self.env_mask += [mask] * len(ids)
        self.logprobs += logprobs if logprobs is not None else [0.0] * len(ids)

    def cut(self, n: int) -> None:
        if n:
            del self.completion_ids[-n:], self.env_mask[-n:], self.logprobs[-n:]


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def assemble(turns: list[Turn]) -> TokenSequence:
    if not turns:
        raise ValueError("an episode with no policy turn has no completion")
    for t in turns:
        if t.logprobs is not None and len(t.logprobs) != len(t.completion_ids):
            raise ValueError(f"{len(t.logprobs)} logprobs for {len(t.completion_ids)} generated tokens")
    seq = TokenSequence(prompt_ids=list(turns[0].prompt_ids))
    context = list(turns[0].prompt_ids)  # what the engine has seen so far, generated tokens included
    last_generated = 0
    for i, turn in enumerate(turns):
        if i:
            agree = common_prefix(turn.prompt_ids, context)
            if agree < len(context) - last_generated:  # history rewritten before the last generation
                seq.turns_dropped = len(turns) - i
                break
            reread = len(context) - agree
            seq.cut(reread)
            seq.tokens_reread += reread
            seq.extend(turn.prompt_ids[agree:], 0)
            context = list(turn.prompt_ids)
        seq.extend(turn.completion_ids, 1, turn.logprobs)
        seq.sampled_logprobs &= turn.logprobs is not None
        context += turn.completion_ids
        last_generated = len(turn.completion_ids)
        seq.turns_used += 1
    return seq
