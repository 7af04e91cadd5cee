"""Reports over run directories: per-arm summaries and tables."""

from awm_runtime.report._summary import ArmStats, RunStats, summary_fields
from awm_runtime.report._table import summary_table

__all__ = ["ArmStats", "RunStats", "summary_fields", "summary_table"]
