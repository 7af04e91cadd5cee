"""The model layer: aliases from awm.toml, one client per role, retries by error class, limits
per endpoint, preflight, and optional model-call processes."""

from awm_runtime.models._call_procs import auto_procs, call_proc_pids, shutdown, start_call_procs, stop_call_procs
from awm_runtime.models._client import ModelClient, ModelReply, estimate_tokens
from awm_runtime.models._cluster_limits import RENEW_EVERY_S, LeaseSource, LimitsService, use_cluster_limits
from awm_runtime.models._exceptions import AttemptError
from awm_runtime.models._limits import EndpointStats, LimiterKey, endpoint_stats, limiter_specs, reset_limiters
from awm_runtime.models._local import local_bases, local_servers, start_local_servers
from awm_runtime.models._preflight import preflight
from awm_runtime.models._reasoning import (
    exhausted,
    modify_params_on,
    reasoning_params,
    state_for,
    state_missing,
    warn_once,
)
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
from awm_runtime.models._serving import Count, ServerFacts, count_prompt, read_facts, tools_problem
from awm_runtime.models._tito import delta_ids, engine_kind, with_sequence
from awm_runtime.models._tokens import TokenDataError, checked_ids
from awm_runtime.models._transport import IN_PROCESS

__all__ = [
    "BUILTIN_ALIASES",
    "DEFAULT_RETRIES",
    "IN_PROCESS",
    "RENEW_EVERY_S",
    "ROLES",
    "AttemptError",
    "Count",
    "EndpointStats",
    "LeaseSource",
    "LimiterKey",
    "LimitsService",
    "ModelClient",
    "ModelConfig",
    "ModelRegistry",
    "ModelReply",
    "RetryPolicy",
    "ServerFacts",
    "TokenDataError",
    "apply_routes",
    "auto_procs",
    "call_proc_pids",
    "checked_ids",
    "count_prompt",
    "delta_ids",
    "endpoint_stats",
    "engine_kind",
    "estimate_tokens",
    "exhausted",
    "limiter_specs",
    "load_registry",
    "load_toml",
    "local_bases",
    "local_servers",
    "modify_params_on",
    "preflight",
    "read_facts",
    "reasoning_params",
    "reset_limiters",
    "shutdown",
    "start_call_procs",
    "start_local_servers",
    "state_for",
    "state_missing",
    "stop_call_procs",
    "tools_problem",
    "use_cluster_limits",
    "warn_once",
    "with_sequence",
]
