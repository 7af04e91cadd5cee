"""Group-normalised advantages: each member's reward against its group's, summing to zero."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

AdvantageMode = Literal["zscore", "center"]


def group_advantages(rewards: Sequence[float], mode: AdvantageMode = "zscore") -> list[float]:
    """`center`: r - mean. `zscore` (GRPO): (r - mean) / std, all zero when every reward is equal.

    Both sum to zero over the group (up to float rounding): dividing by one std keeps the sum.
    """
    n = len(rewards)
    if n == 0:
        return []
    mean = math.fsum(rewards) / n
    centered = [r - mean for r in rewards]
    if mode == "center":
        return centered
    std = math.sqrt(math.fsum(c * c for c in centered) / n)
    if std < 1e-12:
        return [0.0] * n
    return [c / std for c in centered]
