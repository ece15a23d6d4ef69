"""TEST DOUBLE traffic: a few clients sending completions to a server until stopped.

Live traffic for the watchdog's checks on a test host (requests running, tokens and
drafts counted in /metrics): `python -m doubles.vllm_double_traffic --port 8000` inside
the host, stopped by SIGTERM. A request that fails (the server restarting) is tried again
after a short pause. Stdlib only.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import urllib.request
from typing import Any

RETRY_S = 0.2


def client(url: str, body: bytes, headers: dict[str, str], stop: threading.Event) -> None:
    """Send one request after the other until `stop` is set."""
    while not stop.is_set():
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=600) as answer:
                answer.read()
        except (OSError, ValueError):
            stop.wait(RETRY_S)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="vllm_double_traffic", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--model", default="double")
    p.add_argument("--clients", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--api-key", default="")
    args = p.parse_args(argv)
    payload: dict[str, Any] = {
        "model": args.model,
        "prompt": "the watchdog reads the counters",
        "max_tokens": args.max_tokens,
    }
    headers = {"Content-Type": "application/json"}
    if args.api_key:
        headers["Authorization"] = f"Bearer {args.api_key}"
    url = f"http://{args.host}:{args.port}/v1/completions"
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    body = json.dumps(payload).encode()
    threads = [
        threading.Thread(target=client, args=(url, body, headers, stop), daemon=True)
        for _ in range(args.clients)
    ]
    for thread in threads:
        thread.start()
    stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
