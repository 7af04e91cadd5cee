"""Prices per token: configured in awm.toml, else litellm's local cost map, else unknown (cost 0).

The cost map is litellm's bundled JSON, read directly (about 30 ms, once) rather than through
`import litellm` (about 3 s): aliases on the direct transport never need litellm at all.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from awm_runtime.models._registry import ModelConfig

_COST_MAP = "model_prices_and_context_window_backup.json"


@dataclass(frozen=True, slots=True)
class Prices:
    input_per_token: float = 0.0
    output_per_token: float = 0.0
    source: str = "unknown"  # "config", "litellm" or "unknown"

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return prompt_tokens * self.input_per_token + completion_tokens * self.output_per_token


@cache
def _cost_map() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return {}
    path = Path(spec.origin).parent / _COST_MAP
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _entry(model: str) -> dict[str, Any] | None:
    table = _cost_map()
    provider, _, name = model.partition("/")
    for key in (model, name):
        entry = table.get(key) if key else None
        if isinstance(entry, dict) and (key == model or entry.get("litellm_provider") in (provider, None)):
            return entry
    return None


def prices_for(config: ModelConfig) -> Prices:
    if config.input_cost_per_mtok is not None or config.output_cost_per_mtok is not None:
        return Prices((config.input_cost_per_mtok or 0.0) / 1e6, (config.output_cost_per_mtok or 0.0) / 1e6, "config")
    entry = None if config.simulated else _entry(config.model)
    if entry is None or (entry.get("input_cost_per_token") is None and entry.get("output_cost_per_token") is None):
        return Prices()
    return Prices(float(entry.get("input_cost_per_token") or 0.0), float(entry.get("output_cost_per_token") or 0.0),
                  "litellm")
