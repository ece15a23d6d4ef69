"""A local SMTP server for tests (RFC 5321's commands that Python's smtplib sends: EHLO/HELO,
MAIL, RCPT, DATA, RSET, NOOP, QUIT), keeping each message it accepts.

aiosmtpd is not among the project's packages, and Python 3.12 removed smtpd, so this is a
small socketserver one. `answer` makes it refuse mail (e.g. "451 try again later", a
temporary failure); `hang` makes it accept connections and never greet (a mail server that
stopped answering).
"""

from __future__ import annotations

import email
import socketserver
import threading
from dataclasses import dataclass, field
from email.message import Message


@dataclass
class Received:
    sender: str
    recipients: list[str]
    message: Message


@dataclass
class _Session:
    sender: str = ""
    recipients: list[str] = field(default_factory=list)


def _address(line: str) -> str:
    return line.split(":", 1)[1].strip().split(" ", 1)[0].strip("<>")


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def reply(self, line: str) -> None:
        self.wfile.write(line.encode("ascii") + b"\r\n")

    def handle(self) -> None:
        sink = self.server.sink
        if sink.hang.is_set():
            sink.release.wait(30)
            return
        self.reply("220 sink ESMTP")
        session = _Session()
        while True:
            raw = self.rfile.readline(8192)
            if not raw:
                return
            line = raw.decode("ascii", "replace").rstrip("\r\n")
            verb = line.split(" ", 1)[0].upper()
            if verb == "QUIT":
                self.reply("221 bye")
                return
            self.command(verb, line, session)

    def command(self, verb: str, line: str, session: _Session) -> None:
        sink = self.server.sink
        if verb == "EHLO":
            self.reply("250-sink")
            self.reply("250 8BITMIME")
        elif verb in ("HELO", "NOOP", "RSET"):
            self.reply("250 OK")
        elif verb == "MAIL":
            session.sender = _address(line)
            self.reply(sink.answer or "250 OK")
        elif verb == "RCPT":
            session.recipients.append(_address(line))
            self.reply("250 OK")
        elif verb == "DATA":
            self.reply("354 end with <CRLF>.<CRLF>")
            sink.messages.append(Received(session.sender, session.recipients, self.data()))
            session.recipients = []
            self.reply("250 OK queued")
        else:
            self.reply("502 not implemented")

    def data(self) -> Message:
        lines = []
        while True:
            raw = self.rfile.readline(65536)
            if raw in (b".\r\n", b".\n", b""):
                break
            lines.append(raw[1:] if raw.startswith(b"..") else raw)
        return email.message_from_bytes(b"".join(lines))


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    sink: SmtpSink


class SmtpSink:
    def __init__(self) -> None:
        self.messages: list[Received] = []
        self.answer = ""
        self.hang = threading.Event()  # set: greet no one
        self.release = threading.Event()
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.sink = self
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
