"""One truth for "what runs on host H as unit U" (docs/architecture.md, "What runs where"),
as a stateful property test: random sequences of deploys (some regress, some crash while
loading, some are cancelled), rollbacks, restarts, removals, clones, restored versions and
edits made on the host behind specadmin's back. After every step, the host page, every
profile page, the *Roll back to* choices and the last audit event that says what runs
there name exactly the profile version(s) whose text is on the host, which this machine
models itself (and checks against the file actually on the host).

A cancelled job puts back what ran before (the test profiles roll back): the file is
the one the host had before the job.

Fast run: the real runner and the real preflight / push / daemon-reload / restore /
remove steps against an in-memory unit directory (`tests.doubles.unit_host`), with the
service steps doubled. The short run on the real test host runs the whole pipeline over
SSH with the vLLM double (marked testhost).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from audit.models import AuditEvent, AuditKind
from deploys.connect import transport_for
from deploys.jobs import benchmark as bench_hook
from deploys.jobs import pipelines, runner
from deploys.jobs.benchmark import BenchmarkJob
from deploys.jobs.steps import StepResult
from deploys.models import DeployRequest, Host
from deploys.running import rollback_choices
from deploys.services.deploy_requests import deploy_request_approve, deploy_request_create
from deploys.services.unit_requests import (
    deploy_job_cancel,
    remove_request_create,
    restart_request_create,
    rollback_request_create,
)
from hostops.channel import Transport
from hostops.channel.push import BACKUP_SUFFIX, sha256_hex
from tests.deploys.helpers import UNIT_DIR, double_profile, make_host, make_users, unique
from tests.deploys.what_runs_support import (
    LocalSide,
    host_page_units,
    last_job_event_on_host,
    profile_page_rows,
    use_local_side,
)
from tests.testhost.host import TestHost
from units.models import ProfileVersion, ServiceProfile
from units.rendering import render_unit
from units.services import profile_clone, profile_create, profile_restore_version, profile_update

Kind = DeployRequest.Kind
Status = DeployRequest.Status
FAULTS = ("", "", "crash", "regress", "cancel")
# Where a cancel lands: before the job ran, before the push, and in each service step.
CANCEL_POINTS = ("queued", "vllm_check", "stop", "start", "readiness", "benchmark")
BEFORE_PUSH = ("queued", "vllm_check")


def names_in(label: str) -> set[str]:
    """ "vllm-a v1, v3 — regressed (#4)" → {"vllm-a v1", "vllm-a v3"}."""
    names, profile = set(), ""
    for part in label.split(" — ", 1)[0].strip().split(", "):
        words = part.split(" ")
        if len(words) == 2:
            profile = words[0]
        names.add(f"{profile} {words[-1]}")
    return names


class WhatRunsWhere(RuleBasedStateMachine):
    """The machine; `side` (the host and its service steps) is set by the test."""

    side_factory: ClassVar[Callable[[], Any]] = LocalSide

    def __init__(self) -> None:
        super().__init__()
        self.side = self.side_factory()
        self.requester, self.approver = make_users()
        self.client = Client()
        self.client.force_login(self.requester)
        self.host = self.side.make_host()
        self.profiles: list[ServiceProfile] = []
        self.texts: dict[str, set[str]] = {}  # sha256 → {"profile vN", …}, as rendered
        self.units: list[str] = []
        # The model: per unit, the file, every text a job wrote, the story of each text.
        self.file: dict[str, bytes | None] = {}
        self.written: dict[str, set[str]] = {}
        self.story: dict[str, list[tuple[str, str]]] = {}  # (sha256, "good"/"failed"/"regressed")
        self.last_write: dict[str, str] = {}  # the sha256 a job last wrote ("" removed)
        self.audited: dict[str, set[str]] = {}  # unit → what its last event should name

    # -- the model's helpers -------------------------------------------------------------

    def _register(self, version: ProfileVersion) -> None:
        sha = sha256_hex(render_unit(version.data).encode("utf-8"))
        self.texts.setdefault(sha, set()).add(f"{version.profile.name} v{version.number}")

    def _latest(self, profile: ServiceProfile) -> ProfileVersion:
        return profile.versions.order_by("-number").first()

    def _pick(self, items: list[Any], which: int) -> Any:
        return items[which % len(items)]

    def _present(self) -> list[str]:
        """The units whose file is on the host (restart, rollback, remove act on them)."""
        return [unit for unit in self.units if self.file[unit] is not None]

    def _has_file(self) -> bool:
        return bool(self._present())

    def _sha(self, unit: str) -> str:
        data = self.file.get(unit)
        return "" if data is None else sha256_hex(data)

    def _last_good(self, unit: str) -> str:
        story = self.story.get(unit, [])
        for index in range(len(story) - 1, -1, -1):
            sha, what = story[index]
            if what == "good" and not any(s == sha and w != "good" for s, w in story[index + 1 :]):
                return sha
        return ""

    def _marks(self, unit: str, sha: str) -> set[str]:
        return {w for s, w in self.story.get(unit, []) if s == sha and w != "good"}

    # -- running a request ---------------------------------------------------------------

    def _run(self, request: DeployRequest, fault: str = "", cancel_at: str = "") -> str:
        request = deploy_request_approve(request=request, approver=self.approver)
        self.side.arm(
            fault,
            cancel_at,
            lambda r: deploy_job_cancel(request=r, user=self.approver),
        )
        if fault == "cancel" and cancel_at == "queued":
            deploy_job_cancel(request=request, user=self.approver)
            request.refresh_from_db()
            self.side.arm("", "", lambda r: None)
            return request.status
        status = runner.run_deploy(
            request.pk, steps=self.side.steps(request.kind), connect=self.side.connect
        )
        self.side.arm("", "", lambda r: None)
        event(f"{request.kind} {fault or 'ok'}{'@' + cancel_at if fault == 'cancel' else ''}")
        self._audited(request.unit_name)
        return status

    def _audited(self, unit: str) -> None:
        """An audit event just said what runs as `unit`: the versions its text is now
        (a version saved later may be the same text; the event cannot name it)."""
        data = self.side.file(unit)
        sha = "" if data is None else sha256_hex(data)
        self.audited[unit] = set(self.texts.get(sha, set()))

    def _after_text_job(
        self, request: DeployRequest, status: str, fault: str, cancel_at: str
    ) -> None:
        """Model a deploy or rollback request that ran: the file, what was written, how
        the text went."""
        unit = request.unit_name
        before = self.file.get(unit)
        new = request.unit_text.encode("utf-8")
        actual = self.side.file(unit)
        new_sha = sha256_hex(new)
        if fault == "cancel":
            assert status == Status.CANCELLED, (status, request.status_reason)
            assert actual == before, "a cancel puts back what ran before"
            if cancel_at not in BEFORE_PUSH:
                self.written[unit].add(new_sha)
                if actual is not None:  # the new text, or the previous one put back
                    self.written[unit].add(sha256_hex(actual))
                self.last_write[unit] = "" if actual is None else sha256_hex(actual)
            self.file[unit] = actual
            return
        self.written[unit].add(new_sha)
        if fault in ("crash", "regress"):
            assert status == Status.ROLLED_BACK, (status, request.status_reason)
            self.story[unit].append((new_sha, "regressed" if fault == "regress" else "failed"))
            self.file[unit] = before
            if before is not None:
                self.written[unit].add(sha256_hex(before))
            self.last_write[unit] = "" if before is None else sha256_hex(before)
        else:
            assert status == Status.SUCCEEDED, (status, request.status_reason)
            if request.kind == Kind.DEPLOY:
                self.story[unit].append((new_sha, "good"))
            self.file[unit] = new
            self.last_write[unit] = new_sha

    # -- rules -----------------------------------------------------------------------------

    @initialize(fault=st.sampled_from(FAULTS), cancel_at=st.sampled_from(CANCEL_POINTS))
    def a_profile_deployed(self, fault: str, cancel_at: str) -> None:
        """Every example starts with a profile and a first deploy of it (which may fail)."""
        profile = profile_create(data=self.side.profile_data(unique("vllm-kimi")), created_by=None)
        self.profiles.append(profile)
        self._register(profile.versions.get())
        self._add_unit(profile.name)
        self.deploy(0, True, fault, cancel_at)

    def _add_unit(self, unit: str) -> None:
        if unit not in self.units:
            self.units.append(unit)
            self.file[unit] = None
            self.last_write[unit] = ""
            self.written[unit] = set()
            self.story[unit] = []

    @precondition(lambda self: len(self.texts) < 6)
    @rule(which=st.integers(0, 5), seqs=st.integers(1, 512))
    def edit(self, which: int, seqs: int) -> None:
        profile = self._pick(self.profiles, which)
        version = profile_update(profile=profile, data={"max_num_seqs": seqs}, updated_by=None)
        if version is not None:
            self._register(version)

    @precondition(lambda self: len(self.profiles) < 3)
    @rule(which=st.integers(0, 5))
    def clone(self, which: int) -> None:
        source = self._pick(self.profiles, which)
        clone = profile_clone(profile=source, new_name=unique("vllm-ngram"), created_by=None)
        self.profiles.append(clone)
        self._register(clone.versions.get())

    @rule(which=st.integers(0, 5), number=st.integers(1, 8))
    def restore(self, which: int, number: int) -> None:
        profile = self._pick(self.profiles, which)
        old = profile.versions.filter(number__lte=number).order_by("-number").first()
        restored = profile_restore_version(version=old, restored_by=None)
        self._register(restored)

    @rule(
        which=st.integers(0, 5),
        own_unit=st.booleans(),
        fault=st.sampled_from(FAULTS),
        cancel_at=st.sampled_from(CANCEL_POINTS),
    )
    def deploy(self, which: int, own_unit: bool, fault: str, cancel_at: str) -> None:
        fault, cancel_at = self.side.supported(fault, cancel_at)
        profile = self._pick(self.profiles, which)
        unit = profile.name if own_unit and not self.side.one_unit else self.units[0]
        self._add_unit(unit)
        request = deploy_request_create(
            profile_version=self._latest(profile),
            host=self.host,
            requested_by=self.requester,
            unit_name=unit,
            acknowledge_warnings=True,
        )
        status = self._run(request, fault, cancel_at)
        request.refresh_from_db()
        self._after_text_job(request, status, fault, cancel_at)

    @precondition(_has_file)
    @rule(
        unit_ix=st.integers(0, 3),
        choice_ix=st.integers(0, 5),
        fault=st.sampled_from(("", "", "crash", "cancel")),
        cancel_at=st.sampled_from(CANCEL_POINTS),
    )
    def rollback(self, unit_ix: int, choice_ix: int, fault: str, cancel_at: str) -> None:
        fault, cancel_at = self.side.supported(fault, cancel_at)
        unit = self._pick(self._present(), unit_ix)
        rows = host_page_units(self.client, self.host)
        row = rows.get(unit)
        if row is None or not row.choices:
            return
        sha, label = self._pick(row.choices, choice_ix)
        [push] = [
            c.push for c in rollback_choices(host=self.host, unit_name=unit) if c.push.sha256 == sha
        ]
        assert names_in(label) == self.texts[sha]
        request = rollback_request_create(host=self.host, to=push, requested_by=self.requester)
        self._check_request_names(request, sha)
        status = self._run(request, fault, cancel_at)
        request.refresh_from_db()
        self._after_text_job(request, status, fault, cancel_at)

    def _check_request_names(self, request: DeployRequest, sha: str) -> None:
        """The request page and its audit event name the versions of the text it puts back."""
        expected = self.texts[sha]
        version = request.profile_version
        assert f"{version.profile.name} v{version.number}" in expected
        page = self.client.get(
            reverse("deploys:request_detail", args=[request.pk])
        ).content.decode()
        unit_is = page.split('class="unit-is">', 1)[1].split("</dd>", 1)[0]
        assert names_in(unit_is) == expected, (unit_is, expected)
        event = AuditEvent.objects.filter(
            kind=AuditKind.DEPLOY_REQUESTED, object_id=str(request.pk)
        ).latest("id")
        assert f"{event.profile_name} v{version.number}" in expected
        assert set(event.payload["unit_versions"]) == expected

    @precondition(_has_file)
    @rule(unit_ix=st.integers(0, 3), fault=st.sampled_from(("", "", "crash")))
    def restart(self, unit_ix: int, fault: str) -> None:
        fault, _ = self.side.supported(fault, "")
        unit = self._pick(self._present(), unit_ix)
        try:
            request = restart_request_create(
                host=self.host, unit_name=unit, requested_by=self.requester
            )
        except ValidationError:
            # Refused exactly when the file is not the text a job last wrote there.
            assert not self._sha(unit) or self._sha(unit) != self.last_write[unit]
            return
        assert self._sha(unit) == self.last_write[unit]
        version = request.profile_version
        if self._sha(unit) in self.texts:  # a rollback may have put back a hand-edited text
            assert f"{version.profile.name} v{version.number}" in self.texts[self._sha(unit)]
        status = self._run(request, fault)
        assert self.side.file(unit) == self.file[unit]
        assert status == (Status.FAILED if fault == "crash" else Status.SUCCEEDED)

    @precondition(_has_file)
    @rule(unit_ix=st.integers(0, 3))
    def remove(self, unit_ix: int) -> None:
        unit = self._pick(self._present(), unit_ix)
        request = remove_request_create(host=self.host, unit_name=unit, requested_by=self.requester)
        assert self._run(request) == Status.SUCCEEDED
        self.file[unit] = None
        self.last_write[unit] = ""

    @precondition(_has_file)
    @rule(unit_ix=st.integers(0, 3))
    def changed_outside_then_probed(self, unit_ix: int) -> None:
        """Someone edits the unit on the host; the next probe reads it."""
        unit = self._pick(self._present(), unit_ix)
        self.side.change_outside(unit)
        self.file[unit] = self.side.file(unit)
        runner.run_probe(self.host.pk, None, connect=self.side.connect)
        for known in self.units:  # each had a request, so the probe reads each
            self._audited(known)

    def teardown(self) -> None:
        self.side.close(self.units)

    # -- what every page says ----------------------------------------------------------------

    @invariant()
    def the_model_is_the_host(self) -> None:
        for unit in self.units:
            assert self.side.file(unit) == self.file[unit], unit

    @invariant()
    def the_host_page_names_what_is_on_the_host(self) -> None:
        rows = host_page_units(self.client, self.host)
        for unit in self.units:
            sha = self._sha(unit)
            row = rows.get(unit)
            if not sha:
                assert row is None or (not row.versions and "no unit file" in row.text), unit
                continue
            assert row is not None, f"{unit}.service is on the host but not on its page"
            assert row.sha256 == sha
            assert row.versions == self.texts.get(sha, set()), (unit, row.text)
            if sha not in self.texts:
                assert "changed outside specadmin" in row.text
            self._check_choices(unit, row.choices)

    def _check_choices(self, unit: str, choices: list[tuple[str, str]]) -> None:
        """One choice per earlier text that is a version, named by its versions, the last
        known good and the failures marked; never the text on the host now."""
        shas = [sha for sha, _ in choices]
        assert len(shas) == len(set(shas)), f"the same text offered twice: {choices}"
        expected = {s for s in self.written[unit] if s in self.texts} - {self._sha(unit)}
        assert set(shas) == expected, (choices, expected)
        good = self._last_good(unit)
        for sha, label in choices:
            assert names_in(label) == self.texts[sha], label
            assert ("last known good" in label) == (sha == good), (label, good)
            marks = self._marks(unit, sha)
            assert ("regressed" in label) == ("regressed" in marks), label
            assert ("failed at" in label) == ("failed" in marks), label
        if good and good != self._sha(unit):
            assert shas[0] == good, "the last known good is offered first"

    @invariant()
    def every_profile_page_names_what_is_on_the_host(self) -> None:
        for profile in self.profiles:
            shown = profile_page_rows(self.client, profile, self.host)
            for unit in self.units:
                mine = {
                    n
                    for n in self.texts.get(self._sha(unit), set())
                    if n.startswith(f"{profile.name} v")
                }
                assert shown.get(unit, set()) == mine, (profile.name, unit, shown)

    @invariant()
    def the_last_audit_event_names_what_is_on_the_host(self) -> None:
        for unit in self.units:
            entry = last_job_event_on_host(self.host, unit)
            if entry is None:
                assert unit not in self.audited
                continue
            assert entry["sha256"] == self._sha(unit), (unit, entry)
            named = {f"{v['profile']} v{v['version']}" for v in entry["versions"]}
            assert named == self.audited[unit], (unit, entry)


@pytest.fixture
def local_side(monkeypatch: pytest.MonkeyPatch, transactional_db: None) -> None:
    """Each example's machine gets a fresh in-memory host that requests and jobs reach."""

    def side() -> LocalSide:
        return use_local_side(monkeypatch, LocalSide())

    monkeypatch.setattr(WhatRunsWhere, "side_factory", staticmethod(side))


def test_pages_choices_and_audit_name_exactly_the_versions_on_the_host(local_side: None) -> None:
    run_state_machine_as_test(
        WhatRunsWhere,
        settings=settings(
            max_examples=8,  # 8 × 25 steps: ~35 s; more would not fit CI's 30 minutes
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


class SshHostSide(LocalSide):
    """The real test host over SSH: the whole pipeline (systemd, the vLLM double, GPU-clean,
    journal, readiness); faults through the benchmark hook (a regression, a cancel during
    the benchmark). One unit name: two doubles on one port would clash."""

    faults = frozenset({"", "regress", "cancel"})
    cancel_points = frozenset({"queued", "benchmark"})
    one_unit = True
    testhost: ClassVar[TestHost]

    def __init__(self) -> None:
        self.pipelines = pipelines.PIPELINES
        self.rollback = pipelines.ROLLBACK
        self.fault = ""
        self.on_cancel: Callable[[Any], None] | None = None
        self._host: Host | None = None
        self._installed = bench_hook.registered()
        bench_hook.register(self._benchmark)

    def make_host(self) -> Host:
        self._host = make_host(self.testhost)
        return self._host

    def profile_data(self, name: str) -> dict[str, Any]:
        return double_profile(name=name)

    def connect(self, host: Host) -> Transport:
        return transport_for(host)

    def _read(self, path: str) -> bytes | None:
        assert self._host is not None
        with transport_for(self._host) as t:
            return t.read_file(path)

    def file(self, unit_name: str) -> bytes | None:
        return self._read(f"{UNIT_DIR}/{unit_name}.service")

    def change_outside(self, unit_name: str) -> None:
        assert self._host is not None
        path = f"{UNIT_DIR}/{unit_name}.service"
        with transport_for(self._host) as t:
            t.write_file_atomic(path, (t.read_file(path) or b"") + b"# tuned by hand\n")

    def arm(self, fault: str, cancel_at: str = "", on_cancel: Any = None) -> None:
        self.fault, self.on_cancel = fault, on_cancel

    def _benchmark(self, job: BenchmarkJob) -> StepResult:
        fault, self.fault = self.fault, ""
        if fault == "regress":
            return StepResult.regressed("14.8% slower than the baseline", output_tok_s=61.2)
        if fault == "cancel" and callable(self.on_cancel):
            self.on_cancel(job.ctx.request)
            return StepResult.cancelled("cancelled during benchmark")
        return StepResult.skipped("no baseline on this host yet")

    def close(self, unit_names: list[str]) -> None:
        """Stop and delete what the example left on the shared host."""
        bench_hook.register(self._installed)  # the perf app's, for the tests after this one
        units = [f"{u}.service" for u in unit_names]
        self.testhost.nsenter(["systemctl", "stop", *units])
        paths = [f"{UNIT_DIR}/{u}{suffix}" for u in units for suffix in ("", BACKUP_SUFFIX)]
        self.testhost.nsenter(["rm", "-f", *paths])
        self.testhost.nsenter(["systemctl", "daemon-reload"])


@pytest.mark.testhost
def test_the_same_on_the_test_host_over_ssh(
    module_testhost: TestHost, monkeypatch: pytest.MonkeyPatch, transactional_db: None
) -> None:
    monkeypatch.setattr(runner, "CANCEL_POLL_S", 0.0)
    monkeypatch.setattr(SshHostSide, "testhost", module_testhost, raising=False)
    monkeypatch.setattr(WhatRunsWhere, "side_factory", staticmethod(SshHostSide))
    run_state_machine_as_test(
        WhatRunsWhere,
        settings=settings(
            max_examples=3,
            stateful_step_count=6,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
