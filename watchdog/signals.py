"""Incidents opening and closing, for whoever tells people (notifications connect here).

Both are sent after the transaction that opened or closed the incident committed, with
sender=Incident (the model) and incident=the row. Receivers must not raise: they are
called with `send_robust`, and a failing one is logged, never stops a check.
"""

from __future__ import annotations

from django.dispatch import Signal

incident_opened = Signal()
incident_closed = Signal()

__all__ = ["incident_closed", "incident_opened"]
