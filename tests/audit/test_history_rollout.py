"""The history filtered to one rollout (`?rollout=N`): its own events and those of the
deploy requests its approval created, nothing of another rollout or request."""

from __future__ import annotations

import pytest

from audit.services import record

pytestmark = pytest.mark.django_db

HISTORY = "/history/"


def rollout_event(kind: str, rollout: int, **payload: object) -> int:
    return record(
        kind=kind,
        actor=None,
        object_type="fleet.rollout",
        object_id=str(rollout),
        payload={"rollout": rollout, **payload},
    ).id


def request_event(kind: str, request: int) -> int:
    return record(
        kind=kind, actor=None, object_type="deploys.deployrequest", object_id=str(request)
    ).id


def test_the_history_of_one_rollout_is_its_story(client, vera) -> None:
    mine = [
        rollout_event("rollout.requested", 7),
        rollout_event("rollout.approved", 7, requests={"gpu-1": 11, "gpu-2": 12}),
        request_event("deploy.started", 11),
        request_event("deploy.started", 12),
        rollout_event("rollout.aborted", 7),
    ]
    rollout_event("rollout.approved", 8, requests={"gpu-1": 13})
    request_event("deploy.started", 13)
    request_event("deploy.started", 14)
    client.force_login(vera)

    page = client.get(HISTORY, {"rollout": 7})

    assert page.status_code == 200
    assert [e.id for e in page.context["page"]] == mine[::-1]
    assert b'id="history-rollout"' in page.content
    assert b'href="/rollouts/7/"' in page.content
    export = client.get(HISTORY + "export.json", {"rollout": 7})
    assert export.status_code == 200


def test_a_rollout_that_is_not_a_number_is_refused(client, vera) -> None:
    client.force_login(vera)

    page = client.get(HISTORY, {"rollout": "x"})

    assert page.status_code == 400
    assert b'id="history-rollout"' not in page.content
