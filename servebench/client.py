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
    stream = _StreamTimes(record, sent=time.perf_counter())
    record.start_s = stream.sent - started_at
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=stall_timeout_s)
    try:
        async with session.post(url, json=payload, headers=headers, timeout=timeout) as resp:
            if resp.status != 200:
                body = (await resp.text(errors="replace"))[:300].strip()
                record.error = f"HTTP {resp.status} {resp.reason}: {body}"
                return record
            await stream.read(resp)
    except aiohttp.ClientConnectorError as exc:
        record.error = f"{UNREACHABLE} ({exc.os_error or exc})"
        return record
    except TimeoutError:  # aiohttp raises ServerTimeoutError
        record.error = f"stream stalled: no data for {stall_timeout_s:g} s"
        return stream.partial()
    except MalformedStream as exc:
        record.error = f"malformed SSE: {exc}"
        return stream.partial()
    except aiohttp.ClientError as exc:
        record.error = f"connection lost mid-stream ({type(exc).__name__})"
        return stream.partial()
    return stream.finish()


class _StreamTimes:
    """The clock readings of one stream as its events arrive: TTFT at the first event
    with `choices`, one ITL gap per later one; whether `[DONE]` and a usage block came."""

    def __init__(self, record: RequestRecord, *, sent: float) -> None:
        self.record = record
        self.sent = sent
        self.last = sent
        self.first = True
        self.done = False
        self.usage: dict[str, Any] | None = None
        self.decoder = SSEDecoder()

    async def read(self, resp: aiohttp.ClientResponse) -> None:
        async for data in resp.content.iter_any():
            now = time.perf_counter()
            for event in self.decoder.feed(data):
                self._event(event, now)
        for event in self.decoder.close():
            self.done = self.done or event == DONE

    def _event(self, event: str | dict[str, Any], now: float) -> None:
        if isinstance(event, str):  # the only string payload is [DONE]
            self.done = True
            return
        if event.get("choices"):
            if self.first:
                self.record.ttft_s = now - self.sent
                self.first = False
            else:
                self.record.itl_s.append(now - self.last)
            self.last = now
        if event_usage := event.get("usage"):
            self.usage = event_usage

    def partial(self) -> RequestRecord:
        """Keep what was measured before the stream broke (E2EL up to its last token
        chunk)."""
        if not self.first:
            self.record.latency_s = self.last - self.sent
        return self.record

    def finish(self) -> RequestRecord:
        """A whole stream succeeds only with a token chunk, `[DONE]` and the usage block."""
        record = self.partial()
        usage = self.usage
        if self.first:
            record.error = "no token chunk in the stream"
        elif not self.done:
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
