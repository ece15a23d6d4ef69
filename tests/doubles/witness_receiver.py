"""A remote witness for audit checkpoints, on a loopback port: it takes each POST and
appends its body as one line to a file, as a log service or a small receiver on a log
host would (docs/security.md). `status` makes it refuse (e.g. 503, as when it is down).
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class WitnessReceiver:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.status = 200
        self.requests: list[dict[str, str]] = []  # the headers of every POST
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append(dict(self.headers))
                if receiver.status == 200:
                    with receiver.path.open("ab") as fh:
                        fh.write(body + b"\n")
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/checkpoints"

    def lines(self) -> list[str]:
        return self.path.read_text().splitlines() if self.path.exists() else []

    def __enter__(self) -> WitnessReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
