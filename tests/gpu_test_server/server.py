"""The OpenAI-compatible HTTP side of the test server (aiohttp.web): /v1/models,
/v1/completions and /v1/chat/completions (streamed like vLLM's, usage block on request),
/health and /metrics (vLLM's counter names, spec-decode counters for the variant)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

from aiohttp import web

from tests.gpu_test_server.engine import COUNTERS, Engine, Job
from tests.gpu_test_server.model import WordTokenizer

MODEL_NAME = "gpu-test-model"


def _sse(payload: dict[str, Any] | str) -> bytes:
    body = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {body}\n\n".encode()


def metrics_text(spec: bool, num_spec_tokens: int) -> str:
    labels = f'engine="0",model_name="{MODEL_NAME}"'
    with COUNTERS.lock:
        series = [
            ("vllm:prompt_tokens_total", COUNTERS.prompt_tokens),
            ("vllm:generation_tokens_total", COUNTERS.generation_tokens),
            ("vllm:request_success_total", COUNTERS.requests),
        ]
        if spec:
            series += [
                ("vllm:spec_decode_num_drafts_total", COUNTERS.drafts),
                ("vllm:spec_decode_num_draft_tokens_total", COUNTERS.draft_tokens),
                ("vllm:spec_decode_num_accepted_tokens_total", COUNTERS.accepted),
            ]
        per_pos = dict(COUNTERS.accepted_per_pos)
    lines = []
    for name, value in series:
        lines += [f"# TYPE {name} counter", f"{name}{{{labels}}} {float(value)}"]
    if spec:
        name = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
        lines.append(f"# TYPE {name} counter")
        for pos in range(num_spec_tokens):
            lines.append(f'{name}{{{labels},position="{pos}"}} {float(per_pos.get(pos, 0))}')
    return "\n".join(lines) + "\n"


def make_app(engine: Engine, tokenizer: WordTokenizer) -> web.Application:
    spec = engine.prompt_lookup_tokens > 0

    async def health(_: web.Request) -> web.Response:
        return web.Response(text="")

    async def models(_: web.Request) -> web.Response:
        data = [{"id": MODEL_NAME, "object": "model", "owned_by": "test", "root": MODEL_NAME}]
        return web.json_response({"object": "list", "data": data})

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(text=metrics_text(spec, engine.prompt_lookup_tokens))

    async def generate(request: web.Request) -> web.StreamResponse:
        chat = request.path.endswith("/chat/completions")
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"object": "error", "message": "invalid JSON"}, status=400)
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        prompt_ids = tokenizer.encode(_prompt_text(body, chat=chat))
        chunks = _submit(engine, prompt_ids, max_tokens)
        if not body.get("stream"):
            return await _whole_answer(chunks, prompt_ids, tokenizer)
        return await _streamed_answer(request, body, chunks, prompt_ids, tokenizer, chat=chat)

    app = web.Application(client_max_size=16 * 1024 * 1024)
    app.router.add_get("/health", health)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/completions", generate)
    app.router.add_post("/v1/chat/completions", generate)
    return app


Chunks = asyncio.Queue[list[int] | BaseException | None]


def _prompt_text(body: dict[str, Any], *, chat: bool) -> str:
    """The messages' contents (chat) or the prompt (a list of prompts joined)."""
    if chat:
        return " ".join(str(m.get("content", "")) for m in body.get("messages") or [])
    raw = body.get("prompt", "")
    return " ".join(raw) if isinstance(raw, list) else str(raw)


def _submit(engine: Engine, prompt_ids: list[int], max_tokens: int) -> Chunks:
    """Hand the request to the engine's thread; its tokens arrive on the returned queue,
    then None (done) or the exception that ended it."""
    loop = asyncio.get_running_loop()
    chunks: Chunks = asyncio.Queue()

    def on_tokens(tokens: list[int]) -> None:
        loop.call_soon_threadsafe(chunks.put_nowait, tokens)

    def on_done(exc: BaseException | None) -> None:
        loop.call_soon_threadsafe(chunks.put_nowait, exc)

    engine.submit(Job(prompt_ids, max_tokens, on_tokens, on_done))
    return chunks


async def _whole_answer(
    chunks: Chunks, prompt_ids: list[int], tokenizer: WordTokenizer
) -> web.Response:
    out: list[int] = []
    while (item := await chunks.get()) is not None:
        if isinstance(item, BaseException):
            return web.json_response({"object": "error", "message": str(item)}, status=500)
        out += item
    return web.json_response(
        {
            "object": "text_completion",
            "model": MODEL_NAME,
            "choices": [{"index": 0, "text": tokenizer.decode(out), "finish_reason": "length"}],
            "usage": {
                "prompt_tokens": len(prompt_ids),
                "completion_tokens": len(out),
                "total_tokens": len(prompt_ids) + len(out),
            },
        }
    )


async def _streamed_answer(
    request: web.Request,
    body: dict[str, Any],
    chunks: Chunks,
    prompt_ids: list[int],
    tokenizer: WordTokenizer,
    *,
    chat: bool,
) -> web.StreamResponse:
    """One SSE event per engine step, then the usage block when asked for, then [DONE]."""
    resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await resp.prepare(request)
    rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
    base = {
        "id": rid,
        "object": "chat.completion.chunk" if chat else "text_completion",
        "created": int(time.time()),
        "model": MODEL_NAME,
    }
    emitted = 0
    first = True
    while (item := await chunks.get()) is not None:
        if isinstance(item, BaseException):
            await resp.write(_sse({"object": "error", "message": str(item)}))
            return resp
        emitted += len(item)
        choice = _stream_choice(tokenizer.decode(item), chat=chat, first=first)
        first = False
        await resp.write(_sse(base | {"choices": [choice]}))
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {
            "prompt_tokens": len(prompt_ids),
            "completion_tokens": emitted,
            "total_tokens": len(prompt_ids) + emitted,
        }
        await resp.write(_sse(base | {"choices": [], "usage": usage}))
    await resp.write(_sse("[DONE]"))
    return resp


def _stream_choice(text: str, *, chat: bool, first: bool) -> dict[str, Any]:
    """A chat delta (the first one carries the role, as vLLM's) or a completion's text."""
    if not chat:
        return {"index": 0, "text": text, "finish_reason": None}
    delta: dict[str, Any] = {"content": text}
    if first:
        delta["role"] = "assistant"
    return {"index": 0, "delta": delta, "finish_reason": None}
