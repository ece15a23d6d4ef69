"""A local webhook receiver for tests: an HTTP server on a loopback port that keeps every
POST (time, path, headers, JSON body). `status` is what it answers (500 as a receiver that
is down); `hang` makes it read the request and never answer until `release` is set (a
receiver that stopped responding)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Post:
    at: float
    path: str
    headers: dict[str, str]
    body: Any


class WebhookReceiver:
    def __init__(self) -> None:
        self.status = 200
        self.delay = 0.0  # seconds before each answer (a receiver that takes its time)
        self.fail_first_try = False  # answer 500 to the first POST of each body's "id"
        self.hang = threading.Event()
        self.release = threading.Event()
        self.posts: list[Post] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw)
                with receiver.lock:
                    first = not any(
                        isinstance(p.body, dict) and p.body.get("id") == body.get("id")
                        for p in receiver.posts
                    )
                    receiver.posts.append(
                        Post(time.monotonic(), self.path, dict(self.headers), body)
                    )
                status = 500 if receiver.fail_first_try and first else receiver.status
                time.sleep(receiver.delay)
                if receiver.hang.is_set():
                    receiver.release.wait(30)
                    return
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def __enter__(self) -> WebhookReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
