"""Test and benchmark helpers: a scriptable OpenAI-compatible server on loopback."""

from awm_runtime.testing._server import FakeOpenAI, Reply, Responder, sim_responder, storm, teach_builtin

__all__ = ["FakeOpenAI", "Reply", "Responder", "sim_responder", "storm", "teach_builtin"]
