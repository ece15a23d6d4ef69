"""An HTTP GET made on the host itself: a vLLM server may listen on loopback only.

The readiness step asks `/health` and `/v1/models` this way, the watchdog `/metrics`
and the canary's `/health`. curl where the host has it, else the host's python3
(hostops/programs/http_get.py). The API key travels on stdin, never in argv where `ps`
would show it.
"""

from __future__ import annotations

from hostops.channel import Transport
from hostops.programs import program

HTTP_TIMEOUT_S = 5.0
# Prints the body, then the status on a last line.
_CURL = ["curl", "-sS", "--max-time", f"{HTTP_TIMEOUT_S:g}", "-w", "\n%{http_code}"]
_PYTHON_GET = program("http_get.py")  # where the host has no curl


def http_get(transport: Transport, url: str, api_key: str = "") -> tuple[int, str]:
    """(HTTP status, body) of a GET made on the host; status 0 when nothing answered."""
    header = f"Authorization: Bearer {api_key}\n" if api_key else ""
    argv = [*_CURL, "-H", "@-", url] if api_key else [*_CURL, url]
    result = transport.run(argv, timeout=HTTP_TIMEOUT_S + 5, input=header.encode() or None)
    if result.exit_code == 127:  # no curl: the host's python3
        result = transport.run(
            ["python3", "-c", _PYTHON_GET, url, f"{HTTP_TIMEOUT_S:g}"],
            timeout=HTTP_TIMEOUT_S + 10,
            input=api_key.encode(),
        )
    body, _, code = result.stdout_text.rpartition("\n")
    try:
        return (int(code or 0), body)
    except ValueError:
        return (0, body)


__all__ = ["HTTP_TIMEOUT_S", "http_get"]
