"""Test and benchmark helpers: a scriptable OpenAI server, a Ray cluster and a Hugging Face Hub, on loopback."""

from awm_runtime.testing._hub import FakeHub
from awm_runtime.testing._ray_cluster import LoopbackRayCluster
from awm_runtime.testing._server import FakeOpenAI, Reply, Responder, sim_responder, storm, teach_builtin

__all__ = ["FakeHub", "FakeOpenAI", "LoopbackRayCluster", "Reply", "Responder", "sim_responder", "storm",
           "teach_builtin"]
