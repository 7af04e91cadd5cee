"""`--worlds awm-1k`: Snowflake/AgentWorldModel-1K from the Hugging Face Hub, through huggingface_hub's cache.

The first use downloads the dataset's JSONL files (about 220 MB) into the standard Hub cache
(`HF_HUB_CACHE`, default `~/.cache/huggingface/hub`); later uses read the cached snapshot and make
no request at all. `HF_HUB_OFFLINE=1` never touches the network; `HF_ENDPOINT` points at a mirror.
`awm-1k@REV` pins a branch, tag or commit. `hf download Snowflake/AgentWorldModel-1K --repo-type
dataset` refreshes the cache, and the next run reads the new snapshot.
"""

from __future__ import annotations

import sys
from pathlib import Path

from awm_runtime._errors import ConfigError

AWM_1K = "awm-1k"
REPO_ID = "Snowflake/AgentWorldModel-1K"
PATTERNS = ["gen_*.jsonl", "README.md"]


def is_hub_spec(spec: str) -> bool:
    return spec == AWM_1K or spec.startswith(AWM_1K + "@")


def fetch_awm_1k(spec: str = AWM_1K) -> Path:
    """The local snapshot directory of the dataset, downloading it first if the cache lacks it."""
    revision = spec.partition("@")[2] or "main"
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ConfigError(f"--worlds {spec} needs huggingface_hub ({exc}); pip install huggingface_hub") from None
    try:
        return Path(snapshot_download(REPO_ID, repo_type="dataset", revision=revision, allow_patterns=PATTERNS,
                                      local_files_only=True))
    except LocalEntryNotFoundError:
        pass
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        raise ConfigError(f"--worlds {spec}: {REPO_ID} ({revision}) is not in the Hugging Face cache "
                          f"({constants.HF_HUB_CACHE}) and HF_HUB_OFFLINE is set: run once online, or unset it")
    print(f"downloading {REPO_ID} ({revision}) from {constants.ENDPOINT} into {constants.HF_HUB_CACHE} "
          "(about 220 MB, once)", file=sys.stderr, flush=True)
    try:
        return Path(snapshot_download(REPO_ID, repo_type="dataset", revision=revision, allow_patterns=PATTERNS))
    except Exception as exc:  # the one boundary for the Hub's errors: connection, 401/404, disk
        raise ConfigError(f"--worlds {spec}: cannot download {REPO_ID} ({revision}) from {constants.ENDPOINT}: "
                          f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None


def snapshot_commit(path: Path) -> str | None:
    """The commit a Hugging Face cache snapshot directory holds (its name), for the manifest; else None."""
    parts = Path(path).parts
    return parts[-1] if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("datasets--") else None


__all__ = ["AWM_1K", "REPO_ID", "fetch_awm_1k", "is_hub_spec", "snapshot_commit"]
