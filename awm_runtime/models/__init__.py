"""The model layer: aliases from awm.toml, one client per role, retries by error class."""

from awm_runtime.models._client import ModelClient, ModelReply
from awm_runtime.models._limits import EndpointStats, endpoint_stats, reset_limiters
from awm_runtime.models._registry import BUILTIN_ALIASES, ModelConfig, ModelRegistry, load_registry, load_toml

__all__ = [
    "BUILTIN_ALIASES",
    "EndpointStats",
    "ModelClient",
    "ModelConfig",
    "ModelRegistry",
    "ModelReply",
    "endpoint_stats",
    "load_registry",
    "load_toml",
    "reset_limiters",
]
