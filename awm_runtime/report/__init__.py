"""Reports over run directories: per-arm summaries and tables, and the HTML report with plots."""

from awm_runtime.report._compare import load_report, print_report, report_json
from awm_runtime.report._economics import priced
from awm_runtime.report._forks import FORK_METHOD, ForkStats, forks_table
from awm_runtime.report._html import write_html_report
from awm_runtime.report._paired import (
    PAIRED_METHOD,
    PairedStats,
    cluster_bootstrap_ci,
    holm,
    mcnemar_exact_p,
    sign_flip_p,
)
from awm_runtime.report._print import print_run
from awm_runtime.report._sequential import SequentialTest
from awm_runtime.report._stopping import apply_stopping
from awm_runtime.report._summary import ArmStats, RunStats, summary_fields
from awm_runtime.report._table import economics_table, paired_table, sequential_text, summary_table

__all__ = [
    "FORK_METHOD",
    "PAIRED_METHOD",
    "ArmStats",
    "ForkStats",
    "PairedStats",
    "RunStats",
    "SequentialTest",
    "apply_stopping",
    "cluster_bootstrap_ci",
    "economics_table",
    "forks_table",
    "holm",
    "load_report",
    "mcnemar_exact_p",
    "paired_table",
    "priced",
    "print_report",
    "print_run",
    "report_json",
    "sequential_text",
    "sign_flip_p",
    "summary_fields",
    "summary_table",
    "write_html_report",
]
