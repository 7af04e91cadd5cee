"""Token in, token out on the real local model: llama.cpp's llama-server serving SmolLM2-135M-Instruct.

The test starts llama-server (models/_local.py, the [local] extra) behind a recording loopback proxy, so
the bodies checked are the ones the server received. Each turn's /completion prompt must be the previous
request's prompt, then the ids the server returned for it, then the template delta; the final sequence
decodes, through the server's /detokenize, to the transcript; env_mask is 1 exactly on sampled ids.
The same transcripts are then rendered whole by the server's template (chat mode's view) to count how
far that re-render departs from what the model actually sampled.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import Message
from awm_runtime.integrations._engine_tokens import LlamaCppTokens
from awm_runtime.integrations._sequence import common_prefix
from awm_runtime.integrations.trl import make_rollout_func
from awm_runtime.logs import iter_records
from awm_runtime.models import load_registry
from awm_runtime.models._local import LocalServer
from awm_runtime.policies.protocols import ToolProtocol
from tests.conftest import require_local_extra

TINY_WORLD = Path(__file__).parents[3] / "examples" / "tiny_world"


class Proxy:
    """llama-server behind a loopback HTTP proxy that keeps every JSON body POSTed to /completion."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.completions: list[dict[str, Any]] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.url = ""

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(180)

    async def _start(self) -> None:
        import aiohttp
        from aiohttp import web

        cfg = load_registry().get("local/smollm2")
        spec = cfg.local_server.model_copy(update={"ctx_size": 4096, "parallel": 2})  # type: ignore[union-attr]
        self.server = LocalServer(cfg.model_copy(update={"local_server": spec}), self.workdir)
        await self.server.start()
        target = self.server.api_base.removesuffix("/v1")
        self.session = aiohttp.ClientSession()

        async def forward(request: web.Request) -> web.Response:
            body = await request.read()
            if request.path == "/completion":
                import orjson

                self.completions.append(orjson.loads(body))
            async with self.session.request(request.method, target + request.path_qs, data=body,
                                            headers={"Content-Type": "application/json"}) as resp:
                return web.Response(body=await resp.read(), status=resp.status, content_type="application/json")

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", forward)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/v1"

    async def _stop(self) -> None:
        await self.runner.cleanup()
        await self.session.close()
        await self.server.stop()

    def __enter__(self) -> Proxy:
        self.thread.start()
        self.run(self._start())
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.run(self._stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    require_local_extra()
    with Proxy(tmp_path_factory.mktemp("llama")) as p:
        yield p


def test_tito_on_llama_server_sends_exactly_the_sequence_and_it_decodes_to_the_transcript(
        proxy: Proxy, tmp_path: Path) -> None:
    path = tmp_path / "awm.toml"
    path.write_text(f'[models.smol-tito]\nmodel = "openai/smollm2"\napi_base = "{proxy.url}"\nprotocol = "hermes"\n'
                    'tito = true\nmax_concurrency = 2\ntimeout_s = 300\n'
                    'params = { temperature = 0.7, top_p = 0.9, max_tokens = 48 }\n')
    out_dir = tmp_path / "run"
    with make_rollout_func(policy="smol-tito", expert="sim/oracle", config_path=path, worlds=str(TINY_WORLD),
                           tasks="0", max_turns=4, preflight="quick", concurrency=2, out=out_dir) as r:
        prompt = r.rows()[0]["prompt"]
        out = r([prompt, prompt], None)
        llama = LlamaCppTokens(proxy.url)
        records = {rec["episode_id"]: rec for rec in iter_records(out_dir)}
        sent = [b["prompt"] for b in proxy.completions]
        assert all(b["return_tokens"] and b["n_probs"] == 1 for b in proxy.completions)
        assert max(out["turns"]) >= 4, out["turns"]
        report = []
        for i, eid in enumerate(out["episode_id"]):
            record = records[eid]
            replies = [m for m in record["messages"] if m["source"] == "policy"]
            at = [k for k, m in enumerate(record["messages"]) if m["source"] == "policy"]
            assert out["tokens_reread"][i] == 0 and out["turns_dropped"][i] == 0 and out["turns"][i] == len(replies)
            sequence: list[int] = []
            for t, m in enumerate(replies):
                request = sequence + m["prompt_delta_ids"]
                # the body llama-server received, token for token: the previous request, the ids the server
                # returned for it, then only the delta, which holds the messages that followed the reply
                assert request in sent
                if t:
                    delta = r._run(llama.detokenize(m["prompt_delta_ids"]))
                    for new in record["messages"][at[t - 1] + 1:at[t]]:
                        assert (new["content"] or "").strip() in delta
                    assert delta.endswith("<|im_start|>assistant\n")
                sequence = request + m["token_ids"]
            ids = out["prompt_ids"][i] + out["completion_ids"][i]
            assert ids == sequence
            mask = [0] * len(out["prompt_ids"][i]) + out["env_mask"][i]
            assert [t for t, k in zip(ids, mask, strict=True) if k] == [t for m in replies for t in m["token_ids"]]
            assert [lp for lp, k in zip(out["logprobs"][i], out["env_mask"][i], strict=True) if k] == \
                [x for m in replies for x in m["logprobs"]]
            text = r._run(llama.detokenize(ids))
            cursor = 0
            for m in record["messages"][:at[-1] + 1]:  # every message, in order, is in the decoded sequence
                found = text.find((m["content"] or "").strip(), cursor)
                assert found >= 0, m
                cursor = found
            for m in replies:  # each reply's text is the decoding of its own ids
                assert r._run(llama.detokenize(m["token_ids"])).startswith(m["content"] or "")
            # chat mode's view: the whole transcript rendered again by the server's template
            messages = [Message(**{k: v for k, v in m.items() if k in Message.model_fields})
                        for m in record["messages"]]
            wire = ToolProtocol("hermes").wire(messages[:at[-1]])
            rendered = r._run(llama.prompt_ids(wire, None, {})) + replies[-1]["token_ids"]
            report.append((len(ids), len(ids) - common_prefix(ids, rendered), len(rendered)))
        llama_close = llama.aclose()
        r._run(llama_close)
    print(f"\ntito sequence vs full re-render (tokens, differing from the first departure, re-render tokens): {report}")
