"""Test and benchmark helpers: scriptable OpenAI, Anthropic and Gemini servers, a Ray cluster and a Hub, on loopback."""

from awm_runtime.testing._anthropic import FakeAnthropic
from awm_runtime.testing._gemini import FakeGemini
from awm_runtime.testing._hub import FakeHub
from awm_runtime.testing._llama import FakeLlamaServer
from awm_runtime.testing._ray_cluster import LoopbackRayCluster
from awm_runtime.testing._server import FakeOpenAI, Reply, Responder, sim_responder, storm, teach_builtin
from awm_runtime.testing._tokens import ChatML, ChatMLEngine, with_token_ids

__all__ = [
    "ChatML",
    "ChatMLEngine",
    "FakeAnthropic",
    "FakeGemini",
    "FakeHub",
    "FakeLlamaServer",
    "FakeOpenAI",
    "LoopbackRayCluster",
    "Reply",
    "Responder",
    "sim_responder",
    "storm",
    "teach_builtin",
    "with_token_ids",
]
