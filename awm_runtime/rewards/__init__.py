"""Reward shapers: awm, openenv, try-first and advice-cost, registered as entry points."""

from awm_runtime.rewards._shapers import (
    AWM_TABLE,
    OPENENV_TABLE,
    TRY_FIRST_TABLE,
    AdviceCost,
    TableShaper,
    TryFirst,
    advice_cost,
    awm,
    openenv,
    table_key,
    try_first,
)

__all__ = ["AWM_TABLE", "OPENENV_TABLE", "TRY_FIRST_TABLE", "AdviceCost", "TableShaper", "TryFirst", "advice_cost",
           "awm", "openenv", "table_key", "try_first"]
