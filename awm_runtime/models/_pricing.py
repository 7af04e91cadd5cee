"""Prices per token: configured in awm.toml, else litellm's local cost map, else unknown (cost 0)."""

from __future__ import annotations

from dataclasses import dataclass

from awm_runtime.models._litellm import litellm
from awm_runtime.models._registry import ModelConfig


@dataclass(frozen=True, slots=True)
class Prices:
    input_per_token: float = 0.0
    output_per_token: float = 0.0
    source: str = "unknown"  # "config", "litellm" or "unknown"

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return prompt_tokens * self.input_per_token + completion_tokens * self.output_per_token


def prices_for(config: ModelConfig) -> Prices:
    """Looked up once per client: litellm's cost lookup is far too slow to run per call."""
    if config.input_cost_per_mtok is not None or config.output_cost_per_mtok is not None:
        return Prices((config.input_cost_per_mtok or 0.0) / 1e6, (config.output_cost_per_mtok or 0.0) / 1e6, "config")
    if config.simulated:
        return Prices()
    try:
        info = litellm().get_model_info(model=config.model)
    except Exception:  # litellm raises a bare Exception for models it has no entry for
        return Prices()
    inp, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if inp is None and out is None:
        return Prices()
    return Prices(float(inp or 0.0), float(out or 0.0), "litellm")
