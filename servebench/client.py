"""One streamed request against an OpenAI-compatible server, timed like `vllm bench serve`.

Source: vllm/benchmarks/lib/endpoint_request_func.py (`async_request_openai_completions`,
`async_request_openai_chat_completions`, vllm-project/vllm): the clock starts just before
the POST; TTFT is the arrival of the first event that carries `choices` (for chat that is
the role chunk, as in vLLM); every later such event adds one ITL gap; E2EL ends at the last
such event (the trailing usage event and `[DONE]` do not count); output tokens come from
`usage.completion_tokens` (we ask for it with `stream_options.include_usage`).

Unlike vLLM's client, a request only succeeds when the stream is whole: it ends with
`[DONE]` and carried a usage block. Anything else is recorded with a message that says what
went wrong; the runner keeps such requests and marks the level incomplete.
"""

from __future__ import annotations

import time
from typing import Any

import aiohttp

from servebench.prompts import Prompt
from servebench.schema import RequestRecord
from servebench.sse import DONE, MalformedStream, SSEDecoder

UNREACHABLE = "cannot connect to the server"
ENDPOINTS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


def build_payload(
    endpoint: str, model: str, prompt: Prompt, max_tokens: int, *, ignore_eos: bool
) -> dict[str, Any]:
    """Temperature 0, a fixed output length, streaming with a usage block at the end."""
    payload: dict[str, Any] = {
        "model": model,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    limit = prompt.max_tokens or max_tokens
    if endpoint == "chat":
        payload["messages"] = list(prompt.messages)
        payload["max_completion_tokens"] = limit
    else:
        payload["prompt"] = prompt.text
        payload["max_tokens"] = limit
    if ignore_eos:  # vLLM's extra sampling parameter: always produce max_tokens tokens
        payload["ignore_eos"] = True
    return payload


async def send_streaming(
    session: aiohttp.ClientSession,
    url: str,
    payload: dict[str, Any],
    *,
    headers: dict[str, str] | None = None,
    stall_timeout_s: float = 60.0,
    started_at: float = 0.0,
) -> RequestRecord:
    """POST `payload` to `url` and time its stream; never raises for server misbehaviour."""
    record = RequestRecord()
    clock = time.perf_counter
    sent = clock()
    record.start_s = sent - started_at
    last = sent
    first = True
    done = False
    usage: dict[str, Any] | None = None
    decoder = SSEDecoder()
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=stall_timeout_s)
    try:
        async with session.post(url, json=payload, headers=headers, timeout=timeout) as resp:
            if resp.status != 200:
                body = (await resp.text(errors="replace"))[:300].strip()
                record.error = f"HTTP {resp.status} {resp.reason}: {body}"
                return record
            async for data in resp.content.iter_any():
                now = clock()
                for event in decoder.feed(data):
                    if isinstance(event, str):  # the only string payload is [DONE]
                        done = True
                        continue
                    if event.get("choices"):
                        if first:
                            record.ttft_s = now - sent
                            first = False
                        else:
                            record.itl_s.append(now - last)
                        last = now
                    if event_usage := event.get("usage"):
                        usage = event_usage
            for event in decoder.close():
                done = done or event == DONE
    except aiohttp.ClientConnectorError as exc:
        record.error = f"{UNREACHABLE} ({exc.os_error or exc})"
        return record
    except TimeoutError:  # aiohttp raises ServerTimeoutError
        record.error = f"stream stalled: no data for {stall_timeout_s:g} s"
        return _partial(record, first, last, sent)
    except MalformedStream as exc:
        record.error = f"malformed SSE: {exc}"
        return _partial(record, first, last, sent)
    except aiohttp.ClientError as exc:
        record.error = f"connection lost mid-stream ({type(exc).__name__})"
        return _partial(record, first, last, sent)
    _partial(record, first, last, sent)
    if first:
        record.error = "no token chunk in the stream"
    elif not done:
        record.error = "stream ended without [DONE]"
    elif usage is None or not isinstance(usage.get("completion_tokens"), int):
        record.error = (
            "no usage block in the stream (server ignored stream_options.include_usage): "
            "output tokens unknown"
        )
    else:
        record.output_tokens = usage["completion_tokens"]
        record.prompt_tokens = int(usage.get("prompt_tokens") or 0)
        record.success = True
    return record


def _partial(record: RequestRecord, first: bool, last: float, sent: float) -> RequestRecord:
    """Keep what was measured before the stream broke (E2EL up to its last token chunk)."""
    if not first:
        record.latency_s = last - sent
    return record
