"""Test and benchmark helpers: a scriptable OpenAI-compatible server on loopback."""

from awm_runtime.testing._server import FakeOpenAI, Reply, Responder, sim_responder, storm, teach_builtin
from awm_runtime.testing._tokens import ChatML, with_token_ids

__all__ = ["ChatML", "FakeOpenAI", "Reply", "Responder", "sim_responder", "storm", "teach_builtin", "with_token_ids"]
