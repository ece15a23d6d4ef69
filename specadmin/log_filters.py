"""What reaches the console: one line per request (gunicorn's access log) and one line per
error; a traceback only where it helps, i.e. for a server error (a bug).

Django's request logger repeats every 4xx response as a warning with the exception's
traceback (`django.utils.log.log_response()`): a 403 or 404 is already the access log's
line, so those records are dropped. Other records about a client error (a wrong `Host`
header, a CSRF refusal) keep their one line but lose the traceback.
"""

from __future__ import annotations

import logging


class ClientErrorsOnOneLine(logging.Filter):
    """Drop `django.request` records of 4xx responses; strip the traceback from any other
    record about a 4xx response."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if not isinstance(status, int) or status >= 500:
            return True
        if record.name == "django.request":
            return False
        record.exc_info = None
        record.exc_text = None
        return True
