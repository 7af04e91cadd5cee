"""The pip commands that install each optional extra: one string per extra, said the same way everywhere."""

from __future__ import annotations

REPORT_INSTALL = "pip install 'awm-runtime[report]'"  # awm-report --html draws its plots with matplotlib
