"""How many members of a GRPO group get the expert: a fixed ratio, or the adaptive training wheels."""

from __future__ import annotations

from dataclasses import dataclass

from awm_runtime._errors import ConfigError

# BRIEF §3, the seeds' "training wheels": the last step's format-error rate picks expert : solo
# (phase_for holds the thresholds).
TRAINING_WHEELS: dict[str, tuple[int, int]] = {
    "assisted": (6, 2),     # rate over 70%
    "balanced": (4, 4),     # 40% to 70%, both ends included
    "independent": (2, 6),  # under 40%
}
FIRST_PHASE = "assisted"  # step 0 has no previous step: start with the wheels on


def scale(expert: int, solo: int, size: int) -> int:
    """Expert members for an `expert:solo` ratio in a group of `size` (rounded half up)."""
    return max(0, min(size, int(size * expert / (expert + solo) + 0.5)))


def phase_for(rate: float) -> str:
    """The training-wheels phase for a format-error rate in [0, 1]."""
    if rate > 0.70:
        return "assisted"
    if rate >= 0.40:
        return "balanced"
    return "independent"


def phase_members(phase: str, size: int) -> int:
    """Expert members of a group of `size` in a training-wheels phase."""
    expert, solo = TRAINING_WHEELS[phase]
    return scale(expert, solo, size)


@dataclass(frozen=True, slots=True)
class Ratio:
    """`--expert-ratio`: `adaptive`, or a fixed number of expert members per group."""

    spec: str
    fixed: int | None  # None: adaptive

    @property
    def adaptive(self) -> bool:
        return self.fixed is None


def parse_ratio(spec: str, size: int) -> Ratio:
    """`adaptive`, `k` (members), `0.25` (a fraction of the group) or `6:2` (expert:solo, scaled)."""
    text = spec.strip().lower()
    if text == "adaptive":
        return Ratio(text, None)
    hint = (f"--expert-ratio {spec!r}: use 'adaptive', a member count 0-{size}, a fraction such as 0.25, "
            "or expert:solo such as 6:2")
    try:
        if ":" in text:
            e, _, s = text.partition(":")
            expert, solo = int(e), int(s)
            if expert < 0 or solo < 0 or expert + solo == 0:
                raise ValueError
            return Ratio(text, scale(expert, solo, size))
        if "." in text:
            frac = float(text)
            if not 0.0 <= frac <= 1.0:
                raise ValueError
            return Ratio(text, max(0, min(size, int(size * frac + 0.5))))
        k = int(text)
    except ValueError:
        raise ConfigError(hint) from None
    if not 0 <= k <= size:
        raise ConfigError(hint)
    return Ratio(text, k)
