"""The model layer: aliases from awm.toml, one client per role, retries by error class."""

from awm_runtime.models._client import ModelClient, ModelReply
from awm_runtime.models._registry import BUILTIN_ALIASES, ModelConfig, ModelRegistry, load_registry, load_toml

__all__ = ["BUILTIN_ALIASES", "ModelClient", "ModelConfig", "ModelRegistry", "ModelReply", "load_registry", "load_toml"]
