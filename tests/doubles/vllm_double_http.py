"""TEST DOUBLE for `vllm serve`: the OpenAI-compatible HTTP API and /metrics."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# Package-relative: `doubles` in a test host (`python -m doubles.vllm_double`),
# `tests.doubles` in the checkout.
from .vllm_double_config import STREAM_FAULTS, DoubleConfig
from .vllm_double_control import LiveControl
from .vllm_double_log import log
from .vllm_double_schedule import (
    DEFAULT_ACCEPTANCE_RATE,
    DEFAULT_DRAFT_OVERHEAD,
    Chunk,
    count_prompt_tokens,
    plan_chunks,
    step_interval_s,
    token_text,
)

# --------------------------------------------------------------------------------------
# HTTP server


@dataclass
class SpecMetrics:
    """Counters exported by /metrics; advanced only when a chunk is actually sent."""

    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    generation_tokens: int = 0
    prompt_tokens: int = 0
    requests_running: int = 0
    accepted_per_pos: dict[int, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, chunk: Chunk) -> None:
        with self.lock:
            self.drafts += chunk.drafts
            self.draft_tokens += chunk.draft_tokens
            self.accepted += chunk.accepted
            self.generation_tokens += chunk.tokens
            for pos in range(chunk.accepted):  # a draft's accepted tokens are its first ones
                self.accepted_per_pos[pos] = self.accepted_per_pos.get(pos, 0) + 1


def render_metrics(m: SpecMetrics, model: str, spec_enabled: bool, num_spec_tokens: int = 0) -> str:
    """Prometheus text format with vLLM v1 metric names and labels."""
    labels = f'engine="0",model_name="{model}"'
    series: list[tuple[str, str, str, float]] = [
        (
            "vllm:num_requests_running",
            "gauge",
            "Number of requests in model execution batches.",
            m.requests_running,
        ),
        (
            "vllm:prompt_tokens_total",
            "counter",
            "Number of prefill tokens processed.",
            m.prompt_tokens,
        ),
        (
            "vllm:generation_tokens_total",
            "counter",
            "Number of generation tokens processed.",
            m.generation_tokens,
        ),
    ]
    if spec_enabled:  # vLLM registers the spec-decode counters only with a spec config
        series += [
            (
                "vllm:spec_decode_num_drafts_total",
                "counter",
                "Number of spec decoding drafts.",
                m.drafts,
            ),
            (
                "vllm:spec_decode_num_draft_tokens_total",
                "counter",
                "Number of draft tokens.",
                m.draft_tokens,
            ),
            (
                "vllm:spec_decode_num_accepted_tokens_total",
                "counter",
                "Number of accepted tokens.",
                m.accepted,
            ),
        ]
    out = []
    for name, kind, help_text, value in series:
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} {kind}")
        out.append(f"{name}{{{labels}}} {float(value)}")
    if spec_enabled:
        name = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
        out.append(f"# HELP {name} Accepted tokens per draft position.")
        out.append(f"# TYPE {name} counter")
        # vLLM creates one labelled series per draft position up front (zeros included)
        positions = max(num_spec_tokens, max(m.accepted_per_pos, default=-1) + 1)
        for pos in range(positions):
            value = m.accepted_per_pos.get(pos, 0)
            out.append(f'{name}{{{labels},position="{pos}"}} {float(value)}')
    return "\n".join(out) + "\n"


@dataclass
class ServerState:
    model: str
    served_names: list[str]
    max_model_len: int
    api_keys: list[str]
    cfg: DoubleConfig
    num_spec_tokens: int
    spec_enabled: bool
    metrics: SpecMetrics = field(default_factory=SpecMetrics)
    healthy: bool = True
    requests_seen: int = 0
    control: LiveControl = field(init=False)

    def __post_init__(self) -> None:
        self.control = LiveControl(self.cfg.control_file)

    def take_stream_fault(self) -> str:
        """The configured stream fault if this generation request is one it applies to."""
        with self.metrics.lock:
            index = self.requests_seen
            self.requests_seen += 1
        return self.cfg.stream_fault if index >= self.cfg.stream_fault_after else ""


def _sse(payload: dict[str, Any] | str) -> bytes:
    body = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {body}\n\n".encode()


class Handler(BaseHTTPRequestHandler):
    server_version = "uvicorn"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    state: ServerState  # set on the subclass made per server
    received_at = 0.0

    def parse_request(self) -> bool:
        # The schedule's clock starts when the server got the request: for the first request
        # of a connection at accept(), so the thread start-up and header parsing of this
        # stdlib server (1-3 ms on a busy machine) are inside the schedule, not added to it;
        # for a later request on a kept-alive connection when its request line arrived.
        self.received_at = getattr(_ACCEPTED, "at", None) or time.monotonic()
        _ACCEPTED.at = None
        return super().parse_request()

    def log_message(self, format: str, *args: Any) -> None:
        log(
            "INFO",
            "launcher.py:46",
            f'{self.client_address[0]}:{self.client_address[1]} - "'
            f'{self.command} {self.path} HTTP/1.1" {args[1] if len(args) > 1 else ""}',
        )

    def _json(self, status: int, payload: Any) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _text(self, status: int, text: str, ctype: str = "text/plain; charset=utf-8") -> None:
        body = text.encode()
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _authorized(self) -> bool:
        keys = self.state.api_keys
        if not keys or not self.path.startswith("/v1"):
            return True
        if self.headers.get("Authorization") in [f"Bearer {k}" for k in keys]:
            return True
        self._json(401, {"error": "Unauthorized"})
        return False

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/health":
            self._text(200 if self.state.healthy else 503, "")
        elif path == "/metrics":
            self._text(
                200,
                render_metrics(
                    self.state.metrics,
                    self.state.served_names[0],
                    self.state.spec_enabled,
                    self.state.num_spec_tokens,
                ),
                "text/plain; version=0.0.4; charset=utf-8",
            )
        elif path == "/version":
            self._json(200, {"version": self.state.cfg.version})
        elif path == "/v1/models":
            if not self._authorized():
                return
            now = int(time.time())
            data = [
                {
                    "id": name,
                    "object": "model",
                    "created": now,
                    "owned_by": "vllm",
                    "root": self.state.model,
                    "parent": None,
                    "max_model_len": self.state.max_model_len,
                }
                for name in self.state.served_names
            ]
            self._json(200, {"object": "list", "data": data})
        else:
            self._json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        if path not in ("/v1/completions", "/v1/chat/completions"):
            self._json(404, {"detail": "Not Found"})
            return
        if not self._authorized():
            return
        if not self.state.healthy:
            self._json(503, {"object": "error", "message": "EngineCore is dead", "code": 503})
            return
        length = int(self.headers.get("content-length") or 0)
        try:
            req = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._json(400, {"object": "error", "message": "invalid JSON", "code": 400})
            return
        model = req.get("model", self.state.served_names[0])
        if model not in self.state.served_names:
            self._json(
                404,
                {
                    "object": "error",
                    "message": f"The model `{model}` does not exist.",
                    "type": "NotFoundError",
                    "param": "model",
                    "code": 404,
                },
            )
            return
        chat = path.endswith("chat/completions")
        fault = self.state.take_stream_fault()
        if fault == "http_500":
            self._json(500, {"object": "error", "message": "injected fault http_500", "code": 500})
            return
        self._generate(req, model, chat, fault)

    def _generate(self, req: dict[str, Any], model: str, chat: bool, fault: str = "") -> None:
        started = self.received_at
        st = self.state
        if chat:
            prompt = " ".join(str(m.get("content", "")) for m in req.get("messages", []))
        else:
            raw = req.get("prompt", "")
            prompt = " ".join(raw) if isinstance(raw, list) else str(raw)
        prompt_tokens = count_prompt_tokens(prompt)
        max_tokens = req.get("max_completion_tokens") or req.get("max_tokens")
        max_tokens = int(max_tokens or st.cfg.default_max_tokens)
        chunks = plan_chunks(
            max_tokens,
            ttft_s=st.cfg.ttft_ms / 1000,
            itl_s=step_interval_s(
                itl_ms=st.cfg.itl_ms,
                tokens_per_s=st.cfg.tokens_per_s,
                num_speculative_tokens=st.num_spec_tokens,
                spec_speed_factor=st.cfg.spec_speed_factor,
                draft_overhead=st.cfg.draft_overhead,
            ),
            num_speculative_tokens=st.num_spec_tokens,
            accepted_per_step=st.cfg.accepted_per_step,
            acceptance_rate=st.control.acceptance_rate(st.cfg.acceptance_rate),
        )
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        created = int(time.time())
        obj = "chat.completion.chunk" if chat else "text_completion"
        usage = {
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + max_tokens,
            "completion_tokens": max_tokens,
        }
        with st.metrics.lock:
            st.metrics.requests_running += 1
            st.metrics.prompt_tokens += prompt_tokens
        try:
            if req.get("stream"):
                self._stream(req, rid, created, obj, model, chat, chunks, started, usage, fault)
            else:
                texts = []
                emitted = 0
                for chunk in chunks:
                    _sleep_until(started + chunk.at_s)
                    st.control.wait_while_frozen()
                    st.metrics.add(chunk)
                    texts += [token_text(emitted + i) for i in range(chunk.tokens)]
                    emitted += chunk.tokens
                text = "".join(texts)
                choice: dict[str, Any] = {
                    "index": 0,
                    "finish_reason": "length",
                    "stop_reason": None,
                    "logprobs": None,
                }
                if chat:
                    choice["message"] = {"role": "assistant", "content": text}
                else:
                    choice["text"] = text
                self._json(
                    200,
                    {
                        "id": rid,
                        "object": "chat.completion" if chat else "text_completion",
                        "created": created,
                        "model": model,
                        "choices": [choice],
                        "usage": usage,
                    },
                )
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with st.metrics.lock:
                st.metrics.requests_running -= 1

    def _stream(
        self,
        req: dict[str, Any],
        rid: str,
        created: int,
        obj: str,
        model: str,
        chat: bool,
        chunks: list[Chunk],
        started: float,
        usage: dict[str, int],
        fault: str = "",
    ) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        base = {"id": rid, "object": obj, "created": created, "model": model}
        emitted = 0
        for n, chunk in enumerate(chunks):
            _sleep_until(started + chunk.at_s)
            self.state.control.wait_while_frozen()
            if n and n == len(chunks) // 2 and self._break_stream(fault):
                return
            text = "".join(token_text(emitted + i) for i in range(chunk.tokens))
            emitted += chunk.tokens
            last = n == len(chunks) - 1
            finish = "length" if last else None
            if chat:
                if n == 0:  # the role chunk goes out together with the first token
                    self.wfile.write(
                        _sse(
                            base
                            | {
                                "choices": [
                                    {
                                        "index": 0,
                                        "delta": {"role": "assistant", "content": ""},
                                        "logprobs": None,
                                        "finish_reason": None,
                                    }
                                ]
                            }
                        )
                    )
                choice: dict[str, Any] = {
                    "index": 0,
                    "delta": {"content": text},
                    "logprobs": None,
                    "finish_reason": finish,
                }
            else:
                choice = {
                    "index": 0,
                    "text": text,
                    "logprobs": None,
                    "finish_reason": finish,
                    "stop_reason": None,
                }
            self.wfile.write(_sse(base | {"choices": [choice]}))
            self.wfile.flush()
            self.state.metrics.add(chunk)
        options = req.get("stream_options") or {}
        if options.get("include_usage") and fault != "no_usage":
            self.wfile.write(_sse(base | {"choices": [], "usage": usage}))
        self.wfile.write(_sse("[DONE]"))
        self.wfile.flush()

    def _break_stream(self, fault: str) -> bool:
        """Half-way through a stream: the injected fault, if any (True: stop sending)."""
        if fault == "malformed_sse":
            self.wfile.write(b'data: {"id": "cmpl-broken", "choices": [\n\n')
            self.wfile.flush()
        elif fault == "stall":
            time.sleep(self.state.cfg.stall_s)
        return fault in ("malformed_sse", "stall", "disconnect")


def _sleep_until(deadline: float) -> None:
    """Absolute deadlines: chunk times do not drift with the time spent writing."""
    delay = deadline - time.monotonic()
    if delay > 0:
        time.sleep(delay)


class _Server(ThreadingHTTPServer):
    # socketserver's default backlog of 5 drops SYNs when 64 streams connect at once; the
    # retransmit (1 s) would show up as TTFT. uvicorn (vLLM's server) listens with 2048.
    request_queue_size = 2048
    daemon_threads = True

    def process_request(self, request: Any, client_address: Any) -> None:
        """socketserver.ThreadingMixIn.process_request, plus the accept time for the thread."""
        thread = threading.Thread(
            target=self._process_stamped,
            args=(request, client_address, time.monotonic()),
            daemon=True,
        )
        thread.start()

    def _process_stamped(self, request: Any, client_address: Any, accepted_at: float) -> None:
        _ACCEPTED.at = accepted_at
        self.process_request_thread(request, client_address)


_ACCEPTED = threading.local()  # each connection has its own thread


def make_server(host: str, port: int, state: ServerState) -> ThreadingHTTPServer:
    handler = type("BoundHandler", (Handler,), {"state": state})
    return _Server((host, port), handler)


@contextlib.contextmanager
def serving(
    cfg: DoubleConfig,
    *,
    model: str = "m",
    num_spec_tokens: int = 0,
    host: str = "127.0.0.1",
    port: int = 0,
) -> Iterator[tuple[str, ServerState]]:
    """The API alone (no engine, no GPU state) in a thread: yields its base URL and state."""
    state = ServerState(
        model=model,
        served_names=[model],
        max_model_len=4096,
        api_keys=[],
        cfg=cfg,
        num_spec_tokens=num_spec_tokens,
        spec_enabled=num_spec_tokens > 0,
    )
    server = make_server(host, port, state)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()


def spawn_api_process(*args: str) -> tuple[subprocess.Popen[str], str]:
    """Start `api_main` in a child process on a free port; returns it and its base URL.

    For tests and benchmarks (the caller stops the process)."""
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.doubles.vllm_double_http", "--port", "0", "--quiet", *args],
        cwd=repo,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("serving "):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"the vLLM double did not start: {line!r}")
    return proc, line.removeprefix("serving ")


def api_main(argv: list[str] | None = None) -> int:
    """`python -m tests.doubles.vllm_double_http --port N ...`: the API in its own process.

    Benchmarks run the double apart from the client so the two do not share one GIL.
    """
    p = argparse.ArgumentParser(prog="vllm_double_http", description=api_main.__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--model", default="m")
    p.add_argument("--ttft-ms", type=float, default=50.0)
    p.add_argument("--itl-ms", type=float, default=10.0)
    p.add_argument("--tokens-per-s", type=float, default=0.0)
    p.add_argument("--num-spec-tokens", type=int, default=0)
    p.add_argument("--accepted-per-step", type=float, help="mean draft tokens accepted per step")
    p.add_argument("--acceptance-rate", type=float, default=DEFAULT_ACCEPTANCE_RATE)
    p.add_argument("--draft-overhead", type=float, default=DEFAULT_DRAFT_OVERHEAD)
    p.add_argument("--spec-speed-factor", type=float, default=1.0)
    p.add_argument("--stream-fault", default="", choices=STREAM_FAULTS)
    p.add_argument("--stream-fault-after", type=int, default=0)
    p.add_argument("--stall-s", type=float, default=30.0)
    p.add_argument("--quiet", action="store_true", help="no request log lines")
    args = p.parse_args(argv)
    cfg = DoubleConfig(
        ttft_ms=args.ttft_ms,
        itl_ms=args.itl_ms,
        tokens_per_s=args.tokens_per_s,
        accepted_per_step=args.accepted_per_step,
        acceptance_rate=args.acceptance_rate,
        draft_overhead=args.draft_overhead,
        spec_speed_factor=args.spec_speed_factor,
        stream_fault=args.stream_fault,
        stream_fault_after=args.stream_fault_after,
        stall_s=args.stall_s,
    )
    if args.quiet:
        Handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with serving(
        cfg, model=args.model, num_spec_tokens=args.num_spec_tokens, host=args.host, port=args.port
    ) as (url, _):
        print(f"serving {url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    return 0


def iter_sse(lines: Iterator[bytes]) -> Iterator[dict[str, Any] | str]:
    """Parse an SSE body (helper for tests and benchmarks against the double)."""
    for raw in lines:
        line = raw.decode().strip()
        if line.startswith("data: "):
            data = line[len("data: ") :]
            yield data if data == "[DONE]" else json.loads(data)


if __name__ == "__main__":
    sys.exit(api_main())
