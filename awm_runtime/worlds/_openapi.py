"""A scenario app's OpenAPI document, built as FastAPI builds it, without its most wasteful step.

A world worker asks every scenario app for its OpenAPI document once, to list its tools. FastAPI's
`get_openapi` first walks every model reachable from the routes (`get_flat_models_from_model`), and
for that walk it wraps each field of each model in a `ModelField`, whose constructor builds a pydantic
`TypeAdapter` (a core schema). The walk reads only the field's annotation and throws the adapter away.
In the 1,000-scenario sweep the document was a fifth of the world workers' CPU (issue 32). Without the
adapters it takes 52 ms instead of 95 (median CPU over the six bench scenarios, 3 imports each), and
43 ms instead of 105 for the complete AgentWorldModel-1K sample, `content_platform_1`.

`install()` replaces that one function with a walk that reads the annotations directly. The document
is the same, key for key (`test_openapi.py` compares both on every built-in and sample scenario).
One difference remains: a model whose field type pydantic cannot adapt made FastAPI's walk raise; this
walk does not, and the error, if any, comes from the schema generation after it, as it would without
the walk.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

_replaced: Any = None  # FastAPI's own walk, once `install()` has put ours in its place


def flat_models_from_model(model: Any, known_models: set[Any] | None = None) -> set[Any]:
    """`fastapi._compat.v2.get_flat_models_from_model`, reading each field's annotation, not a `ModelField`."""
    from fastapi._compat import v2
    from pydantic import BaseModel

    known_models = known_models or set()  # as FastAPI's: an empty set passed in is not the one filled
    for field_info in model.model_fields.values():
        field_type = field_info.annotation
        if v2.lenient_issubclass(field_type, BaseModel):
            if field_type in known_models:
                continue
            known_models.add(field_type)
            v2.get_flat_models_from_model(field_type, known_models=known_models)
        elif v2.lenient_issubclass(field_type, Enum):
            known_models.add(field_type)
        else:
            v2.get_flat_models_from_annotation(field_type, known_models=known_models)
    return known_models


def install() -> None:
    """Put `flat_models_from_model` in FastAPI's place in this process (once; later calls do nothing)."""
    global _replaced
    from fastapi._compat import v2

    if v2.get_flat_models_from_model is not flat_models_from_model:
        _replaced = v2.get_flat_models_from_model
        v2.get_flat_models_from_model = flat_models_from_model


def fastapi_walk() -> Any:
    """FastAPI's own `get_flat_models_from_model`, installed or not (what the equality tests compare with)."""
    from fastapi._compat import v2

    return _replaced if _replaced is not None else v2.get_flat_models_from_model
