"""Test and benchmark helpers: a scriptable OpenAI-compatible server and a Ray cluster, on loopback."""

from awm_runtime.testing._ray_cluster import LoopbackRayCluster
from awm_runtime.testing._server import FakeOpenAI, Reply, Responder, sim_responder, storm, teach_builtin

__all__ = ["FakeOpenAI", "LoopbackRayCluster", "Reply", "Responder", "sim_responder", "storm", "teach_builtin"]
