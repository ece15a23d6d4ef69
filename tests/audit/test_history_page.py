"""The history page filters by host, profile, user, kind and dates, and exports CSV/JSON."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from unittest import mock

import pytest
from django.http import StreamingHttpResponse

from audit.services import record

pytestmark = pytest.mark.django_db

HISTORY = "/history/"


def at(day: int):
    """Freeze the clock record() reads, so events land on chosen days."""
    return mock.patch(
        "audit.services.timezone.now", return_value=datetime(2026, 3, day, 12, tzinfo=UTC)
    )


@pytest.fixture
def story(alice, bob):
    with at(1):
        record(kind="profile.created", actor=alice, profile_name="vllm-kimi", object_repr="kimi")
    with at(2):
        record(kind="deploy.requested", actor=alice, host_name="gpu1", profile_name="vllm-kimi")
    with at(3):
        record(kind="deploy.approved", actor=bob, host_name="gpu1", profile_name="vllm-kimi")
    with at(4):
        record(kind="unit.pushed", actor=None, host_name="gpu2", profile_name="vllm-qwen")
    with at(5):
        record(kind="rollback", actor=bob, host_name="gpu2", profile_name="vllm-qwen")


def listed_ids(response) -> list[int]:
    return [event.id for event in response.context["page"]]


def test_anonymous_users_are_sent_to_log_in(client):
    response = client.get(HISTORY)

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("path", [HISTORY, HISTORY + "export.csv", HISTORY + "export.json"])
def test_users_without_the_view_permission_are_refused(client, alice, path):
    client.force_login(alice)

    assert client.get(path).status_code == 403


def test_a_viewer_sees_everything_newest_first(client, vera, story):
    client.force_login(vera)
    response = client.get(HISTORY)

    assert response.status_code == 200
    assert listed_ids(response) == [5, 4, 3, 2, 1]
    html = response.content.decode()
    assert "deploy.approved" in html
    assert "system" in html  # unit.pushed by the worker


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"host": "gpu1"}, [3, 2]),
        ({"profile": "vllm-qwen"}, [5, 4]),
        ({"user": "bob"}, [5, 3]),
        ({"kind": "deploy"}, [3, 2]),
        ({"kind": "deploy.approved"}, [3]),
        ({"kind": "rollback"}, [5]),
        ({"since": "2026-03-02", "until": "2026-03-04"}, [4, 3, 2]),
        ({"until": "2026-03-01"}, [1]),
        ({"host": "gpu2", "user": "bob"}, [5]),
        ({"host": "nowhere"}, []),
    ],
)
def test_filters(client, vera, story, query, expected):
    client.force_login(vera)

    assert listed_ids(client.get(HISTORY, query)) == expected


def test_user_filter_finds_events_by_the_old_and_the_new_username(client, vera, alice, story):
    alice.username = "alice.smith"
    alice.save()
    client.force_login(vera)

    assert listed_ids(client.get(HISTORY, {"user": "alice"})) == [2, 1]
    assert listed_ids(client.get(HISTORY, {"user": "alice.smith"})) == [2, 1]


def test_an_inverted_date_range_is_a_bad_request(client, vera, story):
    client.force_login(vera)
    response = client.get(HISTORY, {"since": "2026-03-05", "until": "2026-03-01"})

    assert response.status_code == 400
    assert "after" in response.content.decode()


def test_pages_keep_the_filters_in_their_links(client, vera, alice):
    for _ in range(120):
        record(kind="job.step_started", actor=alice, host_name="gpu1")
    record(kind="job.step_started", actor=alice, host_name="gpu9")
    client.force_login(vera)

    first = client.get(HISTORY, {"host": "gpu1"})
    assert len(listed_ids(first)) == 50
    assert "page 1 of 3" in first.content.decode()
    assert "?host=gpu1&amp;page=2" in first.content.decode()
    third = client.get(HISTORY, {"host": "gpu1", "page": 3})
    assert listed_ids(third) == list(range(20, 0, -1))


def streamed(response) -> str:
    assert isinstance(response, StreamingHttpResponse)
    return b"".join(response.streaming_content).decode()


def test_csv_export_has_every_field_and_honours_the_filters(client, vera, story):
    client.force_login(vera)
    response = client.get(HISTORY + "export.csv", {"host": "gpu1"})

    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert 'filename="audit-' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(streamed(response))))
    assert [row["id"] for row in rows] == ["3", "2"]
    assert rows[0]["kind"] == "deploy.approved"
    assert rows[0]["actor_name"] == "bob"
    assert rows[0]["at"] == "2026-03-03T12:00:00+00:00"
    assert len(rows[0]["hash"]) == 64
    assert rows[0]["prev_hash"] == rows[1]["hash"]


def test_csv_export_defuses_spreadsheet_formulas(client, vera, alice):
    record(kind="profile.created", actor=alice, object_repr='=HYPERLINK("http://evil")')
    client.force_login(vera)

    (row,) = csv.DictReader(io.StringIO(streamed(client.get(HISTORY + "export.csv"))))
    assert row["object_repr"] == '\'=HYPERLINK("http://evil")'


def test_json_export_is_the_faithful_copy(client, vera, story, alice):
    payload = {"unit_sha256": "cd" * 32, "note": "=not a formula here"}
    record(kind="unit.pushed", actor=alice, host_name="gpu1", payload=payload)
    client.force_login(vera)
    response = client.get(HISTORY + "export.json", {"kind": "unit"})

    assert response["Content-Type"] == "application/json"
    events = json.loads(streamed(response))
    assert [e["id"] for e in events] == [6, 4]
    assert events[0]["payload"] == payload
    assert set(events[0]) >= {"at", "actor_id", "actor_name", "object_type", "hash"}


def test_json_export_of_nothing_is_an_empty_list(client, vera):
    client.force_login(vera)

    assert json.loads(streamed(client.get(HISTORY + "export.json"))) == []


def test_exports_refuse_bad_filters(client, vera):
    client.force_login(vera)

    assert client.get(HISTORY + "export.csv", {"since": "yesterday"}).status_code == 400


@pytest.mark.parametrize("export", ["export.csv", "export.json"])
def test_an_export_with_bad_filters_shows_the_history_page_saying_which_filter_is_wrong(
    client, vera, export
):
    client.force_login(vera)
    response = client.get(HISTORY + export, {"since": "2026-03-05", "until": "2026-03-01"})

    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert "</nav>" in html and 'class="msg-error"' in html and "after" in html
