"""Each person's notification settings page: reachable from the account menu, saves what
it says, and answers bad input with an error at the field (never a 500)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from audit.models import AuditEvent
from deploys.models import Host
from notify.events import Event
from notify.models import DeliveryAttempt, EmailSetting, HostMute, Notification, Webhook
from notify.services import enqueue
from tests.deploys.helpers import People

pytestmark = pytest.mark.django_db
URL = "/notifications/"


def _as(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _add(client: Client, url: str, **extra: Any) -> Any:
    data = {"form": "webhook", "url": url, "events": [Event.JOB_FAILED], **extra}
    return client.post(URL, {k if k == "form" else f"webhook-{k}": v for k, v in data.items()})


def test_the_account_menu_links_to_the_page(people: People) -> None:
    page = _as(people.vic).get("/")
    assert 'href="/notifications/"' in page.content.decode()
    assert _as(people.vic).get(URL).status_code == 200


def test_the_page_needs_a_login() -> None:
    response = Client().get(URL)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_email_events_are_saved_and_shown_again(people: People) -> None:
    client = _as(people.olga)
    response = client.post(URL, {"form": "email", "email-events": [Event.JOB_FAILED]})
    assert response.status_code == 302
    assert set(
        EmailSetting.objects.filter(user=people.olga, enabled=True).values_list("event", flat=True)
    ) == {Event.JOB_FAILED}
    page = client.get(URL).content.decode()
    assert 'value="job_failed" id="id_email-events_2" checked' in page
    assert 'value="job_succeeded" id="id_email-events_1" checked' not in page


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("ftp://hooks.example.org/x", "over http or https only; this URL&#x27;s scheme is ftp"),
        ("hooks.example.org/x", "this URL&#x27;s scheme is none"),
        ("https://", "is not a valid http(s) URL with a host name"),
        ("https://user:secret@hooks.example.org/x", "Put no user name or password in the URL"),
        ("https://hooks.example.org/" + "a" * 2100, "Ensure this value has at most 2000"),
        ("javascript:alert(1)", "scheme is javascript"),
    ],
)
def test_a_bad_webhook_url_gets_an_error_at_the_field(people: People, url: str, error: str) -> None:
    response = _add(_as(people.olga), url)
    assert response.status_code == 400
    page = response.content.decode()
    assert error in page
    assert 'data-field="url"' in page and "has-issues" in page
    assert not Webhook.objects.exists()


def test_a_webhook_needs_at_least_one_event(people: People) -> None:
    response = _as(people.olga).post(
        URL, {"form": "webhook", "webhook-url": "https://h.example.org/"}
    )
    assert response.status_code == 400
    assert "Choose at least one kind of event" in response.content.decode()


def test_a_webhook_is_added_listed_and_removed_by_its_owner_only(people: People) -> None:
    client = _as(people.olga)
    assert _add(client, "https://hooks.example.org/olga", slack="on").status_code == 302
    hook = Webhook.objects.get()
    assert (hook.owner, hook.slack, hook.events, hook.host) == (
        people.olga,
        True,
        [Event.JOB_FAILED],
        None,
    )
    assert "https://hooks.example.org/olga" in client.get(URL).content.decode()
    _as(people.vic).post(f"/notifications/webhooks/{hook.pk}/delete/")
    assert Webhook.objects.filter(pk=hook.pk).exists()  # not vic's
    client.post(f"/notifications/webhooks/{hook.pk}/delete/")
    assert not Webhook.objects.exists()
    events = AuditEvent.objects.filter(kind__startswith="notify.webhook").order_by("id")
    assert [(e.kind, e.payload["url"]) for e in events] == [
        ("notify.webhook_added", "https://hooks.example.org/olga"),
        ("notify.webhook_removed", "https://hooks.example.org/olga"),
    ]


def test_a_webhook_for_a_host_and_a_muted_host(people: People, host: Host) -> None:
    client = _as(people.alice)
    assert _add(client, "http://10.1.2.3:8080/alerts", host=host.pk).status_code == 302
    assert Webhook.objects.get().host == host  # http and private addresses: allowed
    assert client.post(URL, {"form": "mute", "mute-hosts": [host.pk]}).status_code == 302
    assert list(HostMute.objects.values_list("user", "host")) == [(people.alice.pk, host.pk)]
    client.post(URL, {"form": "mute"})
    assert not HostMute.objects.exists()
    changes = AuditEvent.objects.filter(kind="notify.settings_changed").order_by("id")
    assert [e.payload for e in changes] == [{"muted_hosts": ["gpu-a"]}, {"muted_hosts": []}]


def test_a_host_that_does_not_exist_is_a_form_error(people: People) -> None:
    response = _add(_as(people.alice), "https://h.example.org/", host=99999)
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()


def test_the_page_lists_a_persons_latest_notifications_without_receivers_answers(
    people: People,
) -> None:
    people.olga.email = "olga@example.org"
    people.olga.save()
    (row,) = enqueue(
        event=Event.JOB_FAILED,
        subject="Request #9 failed",
        text="t",
        payload={},
        users=[people.olga],
    )
    Notification.objects.filter(pk=row.pk).update(last_error="HTTP 500: internal secret")
    page = _as(people.olga).get(URL).content.decode()
    assert "Request #9 failed" in page and "olga@example.org" in page
    assert "internal secret" not in page


def test_an_admin_sees_every_notification_and_each_try_in_djangos_admin(
    people: People,
) -> None:
    people.olga.email = "olga@example.org"
    people.olga.save()
    (row,) = enqueue(
        event=Event.JOB_FAILED,
        subject="Request #9 failed",
        text="t",
        payload={},
        users=[people.olga],
    )
    DeliveryAttempt.objects.create(
        notification=row,
        number=1,
        started_at=row.created_at,
        duration_ms=10004,
        status="failed",
        error="no answer within 10 s",
    )
    for user in (people.ada, people.vic):
        user.is_staff = True
        user.save()
    admin = _as(get_user_model().objects.get(pk=people.ada.pk))
    listing = admin.get("/admin/notify/notification/")
    assert listing.status_code == 200 and "olga@example.org" in listing.content.decode()
    page = admin.get(f"/admin/notify/notification/{row.pk}/change/").content.decode()
    assert "no answer within 10 s" in page and "10004" in page
    assert _as(people.vic).get("/admin/notify/notification/").status_code == 403


def test_an_admin_puts_a_dead_notification_back_in_the_queue(people: People) -> None:
    people.olga.email = "olga@example.org"
    people.olga.save()
    (row,) = enqueue(
        event=Event.JOB_FAILED,
        subject="Request #9 failed",
        text="t",
        payload={},
        users=[people.olga],
    )
    Notification.objects.filter(pk=row.pk).update(state="dead", attempts=8, last_error="HTTP 500")
    people.ada.is_staff = True
    people.ada.save()
    admin = _as(get_user_model().objects.get(pk=people.ada.pk))
    response = admin.post(
        "/admin/notify/notification/",
        {"action": "try_again_now", "_selected_action": [row.pk]},
    )
    assert response.status_code == 302
    row.refresh_from_db()
    assert (row.state, row.attempts) == ("pending", 0)
