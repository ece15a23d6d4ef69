"""An incident the watchdog opens and closes is told to people: the signals are wired
to notifications when the app loads (watchdog.apps), with no test-side connection."""

from __future__ import annotations

import pytest

from notify.events import Event
from notify.models import Notification
from tests.deploys.conftest import people  # noqa: F401  (fixture)
from tests.deploys.helpers import People
from tests.doubles.watch_host import FakeHostTransport
from tests.watchdog.helpers import UNIT, healthy_fake, make_host
from watchdog.services import check_host

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_stopped_unit_is_mailed_to_approvers_when_it_opens_and_when_it_closes(
    people: People,  # noqa: F811 (the fixture imported above)
) -> None:
    for user in vars(people).values():
        user.email = f"{user.username}@example.org"
        user.save(update_fields=["email"])
    fake, host, history = healthy_fake(), make_host(), {}
    clock = iter(float(t) for t in range(1000, 2000, 30))

    def check() -> None:
        nonlocal history
        evaluation, _, _ = check_host(
            host=host,
            transport=FakeHostTransport(fake),
            history=history,
            clock=lambda: next(clock),
        )
        history = evaluation.history

    fake.units[UNIT].active, fake.units[UNIT].sub = "inactive", "dead"
    check()
    fake.units[UNIT].active, fake.units[UNIT].sub = "active", "running"
    check()
    for event, verb in ((Event.INCIDENT_OPENED, "opened"), (Event.INCIDENT_CLOSED, "closed")):
        rows = Notification.objects.filter(event=event)
        assert {r.address for r in rows} >= {"ada@example.org"}, event
        assert all(r.subject == f"Incident {verb} on gpu1: unit_failed" for r in rows)
