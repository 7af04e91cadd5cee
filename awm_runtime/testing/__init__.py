"""Test and benchmark helpers: a scriptable OpenAI-compatible server and a Ray cluster, on loopback."""

from awm_runtime.testing._ray_cluster import LoopbackRayCluster
from awm_runtime.testing._server import FakeOpenAI, Reply, Responder, sim_responder, storm, teach_builtin
from awm_runtime.testing._tokens import ChatML, with_token_ids

__all__ = [
    "ChatML",
    "FakeOpenAI",
    "LoopbackRayCluster",
    "Reply",
    "Responder",
    "sim_responder",
    "storm",
    "teach_builtin",
    "with_token_ids",
]
