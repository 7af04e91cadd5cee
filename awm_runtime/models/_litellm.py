"""The one place litellm is imported: lazily, offline-safe, with our simulated provider."""

from __future__ import annotations

import os
from functools import cache
from typing import Any


@cache
def litellm() -> Any:
    """Import litellm (about 2-3 s) on first use only, never at `import awm_runtime`."""
    # Without this, litellm fetches its price map from the internet at import and retries with sleeps.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_TELEMETRY", "False")
    # litellm's aiohttp pool allows 500 connections per host (read at import): 1,000 calls in flight to
    # one vLLM server would queue half of them in the pool. Our per-endpoint limiter is the bound.
    os.environ.setdefault("AIOHTTP_CONNECTOR_LIMIT", "100000")
    os.environ.setdefault("AIOHTTP_CONNECTOR_LIMIT_PER_HOST", "100000")
    import litellm as _litellm

    from awm_runtime.models.sim._provider import SimProvider

    _litellm.telemetry = False
    _litellm.suppress_debug_info = True
    _litellm.drop_params = True  # providers reject params they lack (e.g. seed); drop, don't fail
    if not any(item.get("provider") == "sim" for item in _litellm.custom_provider_map):
        _litellm.custom_provider_map = [*_litellm.custom_provider_map,
                                        {"provider": "sim", "custom_handler": SimProvider()}]
    return _litellm
