"""A local SMTP server for tests (RFC 5321's commands that Python's smtplib sends: EHLO/HELO,
MAIL, RCPT, DATA, RSET, NOOP, QUIT), keeping each message it accepts.

aiosmtpd is not among the project's packages, and Python 3.12 removed smtpd, so this is a
small socketserver one. `answer` makes it refuse mail (e.g. 451, a temporary failure);
`hang` makes it accept connections and never greet (a mail server that stopped answering).
"""

from __future__ import annotations

import email
import socketserver
import threading
from dataclasses import dataclass
from email.message import Message


@dataclass
class Received:
    sender: str
    recipients: list[str]
    message: Message


class SmtpSink:
    def __init__(self) -> None:
        self.messages: list[Received] = []
        self.answer = ""  # e.g. "451 try again later": the answer to MAIL, instead of 250
        self.hang = threading.Event()  # set: greet no one
        self.release = threading.Event()
        sink = self

        class Handler(socketserver.StreamRequestHandler):
            def reply(self, line: str) -> None:
                self.wfile.write(line.encode("ascii") + b"\r\n")

            def handle(self) -> None:
                if sink.hang.is_set():
                    sink.release.wait(30)
                    return
                self.reply("220 sink ESMTP")
                sender, recipients = "", []
                while True:
                    raw = self.rfile.readline(8192)
                    if not raw:
                        return
                    line = raw.decode("ascii", "replace").rstrip("\r\n")
                    verb = line.split(" ", 1)[0].upper()
                    if verb == "EHLO":
                        self.reply("250-sink")
                        self.reply("250 8BITMIME")
                    elif verb == "HELO" or verb in ("NOOP", "RSET"):
                        sender, recipients = ("", []) if verb == "RSET" else (sender, recipients)
                        self.reply("250 OK")
                    elif verb == "MAIL":
                        if sink.answer:
                            self.reply(sink.answer)
                            continue
                        sender = line.split(":", 1)[1].strip().strip("<>").split(">")[0]
                        self.reply("250 OK")
                    elif verb == "RCPT":
                        recipients.append(line.split(":", 1)[1].strip().strip("<>"))
                        self.reply("250 OK")
                    elif verb == "DATA":
                        self.reply("354 end with <CRLF>.<CRLF>")
                        self.data(sender, recipients)
                        sender, recipients = "", []
                        self.reply("250 OK queued")
                    elif verb == "QUIT":
                        self.reply("221 bye")
                        return
                    else:
                        self.reply("502 not implemented")

            def data(self, sender: str, recipients: list[str]) -> None:
                lines = []
                while True:
                    raw = self.rfile.readline(65536)
                    if raw in (b".\r\n", b".\n", b""):
                        break
                    lines.append(raw[1:] if raw.startswith(b"..") else raw)
                parsed = email.message_from_bytes(b"".join(lines))
                sink.messages.append(Received(sender, list(recipients), parsed))

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def __enter__(self) -> SmtpSink:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
