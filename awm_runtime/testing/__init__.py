"""Test and benchmark helpers: a scriptable OpenAI server, a Ray cluster and a Hugging Face Hub, on loopback."""

from awm_runtime.testing._hub import FakeHub
from awm_runtime.testing._ray_cluster import LoopbackRayCluster
from awm_runtime.testing._server import FakeOpenAI, Reply, Responder, sim_responder, storm, teach_builtin
from awm_runtime.testing._tokens import ChatML, ChatMLEngine, with_token_ids

__all__ = [
    "ChatML",
    "ChatMLEngine",
    "FakeHub",
    "FakeOpenAI",
    "LoopbackRayCluster",
    "Reply",
    "Responder",
    "sim_responder",
    "storm",
    "teach_builtin",
    "with_token_ids",
]
