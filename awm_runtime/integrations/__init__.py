"""Bridges to trainers. `awm_runtime.integrations.trl` (TRL's GRPOTrainer) needs the `[train]` extra."""
