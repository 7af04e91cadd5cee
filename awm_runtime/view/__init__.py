"""awm-view: browse a run directory in the browser, streaming, while the run may still be writing."""

from awm_runtime.view._app import build_app
from awm_runtime.view._index import EpisodeIndex, Query, Row, run_status
from awm_runtime.view._serve import is_loopback, serve

__all__ = [
    "EpisodeIndex",
    "Query",
    "Row",
    "build_app",
    "is_loopback",
    "run_status",
    "serve",
]
