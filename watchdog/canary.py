"""The one-token canary request: an engine can hang while `/health` keeps answering 200
(vLLM issues #39863, #51663), and /metrics shows it only once requests are running. So,
where a host's watch has the canary on, each check also asks each running vLLM server
for one token — `POST /v1/completions` with `max_tokens: 1` and a deadline — on the host
itself, with curl, as /metrics and /health are asked (`hostops.http_on_host.http_get`:
the server may listen on loopback only; the API key travels on stdin, never in argv).
`watchdog.checks.check_canary` judges the result."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Protocol

from hostops.channel import Transport
from hostops.http_on_host import http_get

DEFAULT_DEADLINE_S = 10.0
CURL_TIMED_OUT = 28  # curl(1), EXIT CODES: "Operation timeout"
BODY_CHARS = 2000


class Server(Protocol):
    """Where a vLLM server answers on the host (`watchdog.reader.Target`)."""

    @property
    def base_url(self) -> str: ...
    @property
    def api_key(self) -> str: ...
    @property
    def model(self) -> str: ...


class CanaryUnreadable(Exception):
    """The canary could not be asked at all (no curl on the host): not a verdict."""


@dataclass(frozen=True)
class CanaryResult:
    """`status` None: not asked (/health did not answer 200); 0: no answer by the deadline
    or the connection failed (`error` says which)."""

    health: int
    status: int | None
    seconds: float
    deadline_s: float
    error: str = ""
    body: str = ""

    @property
    def answered(self) -> bool:
        return self.status == 200 and not self.error


def _request_body(model: str) -> str:
    body: dict[str, object] = {"prompt": "Hello", "max_tokens": 1, "temperature": 0}
    if model:
        body["model"] = model
    return json.dumps(body)


def ask_canary(
    transport: Transport, target: Server, *, deadline_s: float = DEFAULT_DEADLINE_S
) -> CanaryResult:
    """/health first (a server that does not answer it is not asked); then one token."""
    if deadline_s <= 0:
        raise ValueError("the canary's deadline must be positive")
    health, _ = http_get(transport, target.base_url + "/health")
    if health != 200:
        return CanaryResult(health, None, 0.0, deadline_s)
    argv = [
        "curl",
        "-sS",
        "--max-time",
        f"{deadline_s:g}",
        "-w",
        "\n%{http_code}",
        "-H",
        "Content-Type: application/json",
        "--data-raw",
        _request_body(target.model),
    ]
    header = f"Authorization: Bearer {target.api_key}\n" if target.api_key else ""
    if header:
        argv += ["-H", "@-"]
    argv.append(target.base_url + "/v1/completions")
    started = time.monotonic()
    result = transport.run(argv, timeout=deadline_s + 5, input=header.encode() or None)
    seconds = round(time.monotonic() - started, 3)
    if result.exit_code == 127:
        raise CanaryUnreadable("curl is not on the host: the canary request needs it")
    body, _, code = result.stdout_text.rpartition("\n")
    body = body[-BODY_CHARS:]
    if result.exit_code == CURL_TIMED_OUT:
        error = f"no answer: timed out after {deadline_s:g} s"
        return CanaryResult(health, 0, seconds, deadline_s, error, body)
    if result.exit_code != 0:
        stderr = result.stderr_text.strip()[-BODY_CHARS:]
        return CanaryResult(health, 0, seconds, deadline_s, stderr or "curl failed", body)
    status = int(code) if code.strip().isdigit() else 0
    error = "" if status != 200 else _no_completion(body)
    return CanaryResult(health, status, seconds, deadline_s, error, body)


def _no_completion(body: str) -> str:
    """ "" when the answer is a completion (a `choices` list); else why not."""
    try:
        choices = json.loads(body).get("choices")
    except (ValueError, AttributeError):
        return "answered 200 with something that is not JSON"
    return "" if isinstance(choices, list) and choices else "answered 200 without a completion"


__all__ = ["DEFAULT_DEADLINE_S", "CanaryResult", "CanaryUnreadable", "Server", "ask_canary"]
