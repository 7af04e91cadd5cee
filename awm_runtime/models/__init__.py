"""The model layer: aliases from awm.toml, one client per role, retries by error class, limits
per endpoint, preflight, and optional model-call processes."""

from awm_runtime.models._call_procs import shutdown, start_call_procs, stop_call_procs
from awm_runtime.models._client import ModelClient, ModelReply, estimate_tokens
from awm_runtime.models._cluster_limits import LeaseSource, LimitsService, use_cluster_limits
from awm_runtime.models._limits import EndpointStats, endpoint_stats, limiter_specs, reset_limiters
from awm_runtime.models._preflight import preflight
from awm_runtime.models._registry import (
    BUILTIN_ALIASES,
    ROLES,
    ModelConfig,
    ModelRegistry,
    apply_routes,
    load_registry,
    load_toml,
)
from awm_runtime.models._retry import DEFAULT_RETRIES, RetryPolicy

__all__ = [
    "BUILTIN_ALIASES",
    "DEFAULT_RETRIES",
    "ROLES",
    "EndpointStats",
    "LeaseSource",
    "LimitsService",
    "ModelClient",
    "ModelConfig",
    "ModelRegistry",
    "ModelReply",
    "RetryPolicy",
    "apply_routes",
    "endpoint_stats",
    "estimate_tokens",
    "limiter_specs",
    "load_registry",
    "load_toml",
    "preflight",
    "reset_limiters",
    "shutdown",
    "start_call_procs",
    "stop_call_procs",
    "use_cluster_limits",
]
