"""Delivery settings (from specadmin/settings.py, environment-driven; docs/notifications.md,
"Settings"), read on each use so tests and operators can change them."""

from __future__ import annotations

from django.conf import settings


def timeout_s() -> float:
    """How long one try may wait on a socket (connect, each read): a dead receiver costs a
    worker at most this per try."""
    return float(getattr(settings, "NOTIFY_TIMEOUT_S", 10.0))


def max_attempts() -> int:
    """Tries before a notification is marked dead."""
    return int(getattr(settings, "NOTIFY_MAX_ATTEMPTS", 8))


def backoff_s() -> float:
    """The wait after the first failed try; it doubles after each further one."""
    return float(getattr(settings, "NOTIFY_BACKOFF_S", 30.0))


def max_backoff_s() -> float:
    """The longest wait between two tries."""
    return float(getattr(settings, "NOTIFY_MAX_BACKOFF_S", 3600.0))


def run_budget_s() -> float:
    """How long one run of the delivery task keeps claiming new notifications (what is left
    waits for the next run, at most a minute away)."""
    return float(getattr(settings, "NOTIFY_RUN_BUDGET_S", 60.0))


def site_url() -> str:
    """The address of specadmin that links in messages start with ("" leaves them relative)."""
    return str(getattr(settings, "NOTIFY_SITE_URL", "")).rstrip("/")
