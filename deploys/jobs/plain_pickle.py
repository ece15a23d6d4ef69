"""Reading django-q2's pickles as plain data, so no stored pickle can run code.

A pickle runs code while it is read, through the globals it names (`os.system`,
`subprocess.run`, any class's `__reduce__`): Python's pickle documentation says never to
unpickle data from an untrusted source, and a database row is one. django-q2 keeps two
kinds: each task package (signed, in the queue: `django_q/signing.py`) and the `args`,
`kwargs` and `result` of every `django_q_task` row (django-picklefield), which its monitor
reads back for every finished task (`django_q/monitor.py` save_task, and its pruning of old
results) and the admin reads for its lists. What specadmin stores there is plain data:
strings, numbers, lists, dicts, datetimes. Everything else is refused here, following the
"Restricting Globals" recipe of the pickle documentation (`Unpickler.find_class`).
"""

from __future__ import annotations

import io
import logging
import pickle
from typing import Any

import picklefield.fields

log = logging.getLogger(__name__)

# Task packages hold a timezone-aware datetime (`started`: django_q/tasks.py async_task).
_PLAIN_GLOBALS = frozenset(
    {
        ("datetime", "datetime"),
        ("datetime", "date"),
        ("datetime", "time"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
    }
)


class UnsafePickle(Exception):
    """A pickle that is not plain data; the message says what it names."""


class _PlainDataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _PLAIN_GLOBALS:
            return super().find_class(module, name)
        raise UnsafePickle(f"its pickle names {module}.{name}; specadmin stores plain data only")


def plain_loads(data: bytes) -> Any:
    """`pickle.loads` for plain data; UnsafePickle for anything else (unreadable included)."""
    try:
        return _PlainDataUnpickler(io.BytesIO(data)).load()
    except UnsafePickle:
        raise
    except Exception as exc:  # truncated or malformed: refused, never a crash elsewhere
        raise UnsafePickle(f"its pickle cannot be read ({exc})") from None


def _stored_value_loads(data: bytes) -> Any:
    try:
        return plain_loads(data)
    except UnsafePickle as exc:
        log.error("a pickled value in the database was not unpickled: %s", exc)
        raise


def install() -> None:
    """Make django-picklefield (django-q2's `Task.args/kwargs/result`) read plain data only.

    picklefield's `dbsafe_decode` calls the module's `loads` (picklefield/fields.py), and
    its `to_python` returns the stored text unchanged when that raises: a hostile row
    reads as its base64 text. Called from `DeploysConfig.ready()`, in every process.
    """
    picklefield.fields.loads = _stored_value_loads


__all__ = ["UnsafePickle", "install", "plain_loads"]
