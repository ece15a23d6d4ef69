"""Hosts without a real host: adding with a confirmed key, re-pinning, probing (through a
scripted transport), and `transport_for`. The real-SSH story is in test_e2e_deploy.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from audit.models import AuditEvent
from deploys.connect import HostNotReady, transport_for
from deploys.jobs import runner
from deploys.models import Host
from deploys.probe import (
    MANAGED_MARKER,
    parse_systemd_version,
    parse_vllm_version,
    probe_host,
    vllm_version_argv,
)
from deploys.services import hosts as services
from deploys.services.hosts import (
    host_create,
    host_pin_key,
    host_record_probe,
    host_record_probe_error,
    host_request_probe,
    host_rescan_key,
)
from hostops.channel import CommandResult, GpuInfo, GpuUnavailable, HostUnreachable, Transport
from hostops.channel.base import StagedFile
from hostops.channel.local import LocalTransport
from hostops.channel.ssh import HostKeyInfo, SSHTransport
from tests.deploys.helpers import Enqueued, People, fake_host_key


class KeyDesk:
    """What `probe_host_key` sees: the key each address presents, or an error."""

    def __init__(self) -> None:
        self.keys: dict[tuple[str, int], HostKeyInfo] = {}
        self.error: Exception | None = None
        self.calls = 0

    def probe(self, address: str, port: int, timeout: float) -> HostKeyInfo:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return self.keys[(address, port)]


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> KeyDesk:
    desk = KeyDesk()
    monkeypatch.setattr(services, "probe_host_key", desk.probe)
    return desk


def add_host(people: People, key: HostKeyInfo, **kwargs: Any) -> Host:
    kwargs = {
        "name": "gpu-b",
        "address": "10.0.0.8",
        "ssh_port": 2222,
        "key_file": "/etc/specadmin/id_ed25519",
        "host_key": f"{key.key_type} {key.base64}",
        "confirmed_fingerprint": key.fingerprint_sha256,
        "created_by": people.ada,
        **kwargs,
    }
    return host_create(**kwargs)


# -- adding a host -------------------------------------------------------------------------


def test_reading_the_key_shows_its_fingerprint_and_stores_nothing(
    people: People, keys: KeyDesk
) -> None:
    key = keys.keys[("10.0.0.8", 2222)] = fake_host_key()
    shown = services.host_probe_key(address="10.0.0.8", port=2222)
    assert shown.fingerprint_sha256 == key.fingerprint_sha256
    assert shown.fingerprint_sha256.startswith("SHA256:")
    assert not Host.objects.exists() and not AuditEvent.objects.exists()


def test_admin_confirms_the_fingerprint_and_the_key_is_pinned(
    people: People, keys: KeyDesk
) -> None:
    key = keys.keys[("10.0.0.8", 2222)] = fake_host_key()
    added = add_host(people, key)
    assert added.key_pinned
    assert added.host_key == f"{key.key_type} {key.base64}"
    assert added.host_key_fingerprint == key.fingerprint_sha256
    assert added.host_key_confirmed_by == people.ada and added.host_key_confirmed_at
    events = list(AuditEvent.objects.order_by("id"))
    assert [e.kind for e in events] == ["host.added", "host.key_pinned"]
    assert events[1].payload["fingerprint"] == key.fingerprint_sha256
    assert "id_ed25519" not in str(events[1].payload)  # no credentials in the key event
    assert keys.calls == 1  # probed again at confirmation


def test_a_key_swapped_between_showing_and_confirming_is_refused(
    people: People, keys: KeyDesk
) -> None:
    shown = fake_host_key()
    keys.keys[("10.0.0.8", 2222)] = fake_host_key()  # what the host presents now
    with pytest.raises(ValidationError, match="now presents another host key"):
        add_host(people, shown)
    assert not Host.objects.exists() and not AuditEvent.objects.exists()


def test_a_fingerprint_of_another_key_is_refused(people: People, keys: KeyDesk) -> None:
    key = keys.keys[("10.0.0.8", 2222)] = fake_host_key()
    with pytest.raises(ValidationError, match="does not belong to the key shown"):
        add_host(people, key, confirmed_fingerprint=fake_host_key().fingerprint_sha256)
    assert not Host.objects.exists()


def test_unreachable_host_cannot_be_added(people: People, keys: KeyDesk) -> None:
    keys.error = HostUnreachable("cannot connect to 10.0.0.8:2222: Connection refused")
    with pytest.raises(ValidationError, match="Connection refused"):
        services.host_probe_key(address="10.0.0.8", port=2222)
    with pytest.raises(ValidationError, match="Connection refused"):
        add_host(people, fake_host_key())
    assert not Host.objects.exists()


@pytest.mark.parametrize(
    ("key_file", "message"),
    [
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blb…", "not the key itself"),
        ("id_ed25519", "absolute path"),
        ("", "key file path is required"),
    ],
)
def test_key_file_must_be_a_path_never_key_material(
    people: People, keys: KeyDesk, key_file: str, message: str
) -> None:
    key = keys.keys[("10.0.0.8", 2222)] = fake_host_key()
    with pytest.raises(ValidationError, match=message):
        add_host(people, key, key_file=key_file)
    assert not Host.objects.exists()


def test_agent_auth_needs_no_key_file(people: People, keys: KeyDesk) -> None:
    key = keys.keys[("10.0.0.8", 2222)] = fake_host_key()
    added = add_host(people, key, auth=Host.Auth.AGENT, key_file="/ignored")
    assert added.key_file == ""


def test_invalid_fields_are_refused(people: People, keys: KeyDesk) -> None:
    key = keys.keys[("10.0.0.8", 70000)] = fake_host_key()
    with pytest.raises(ValidationError) as info:
        add_host(people, key, name="bad name!", ssh_port=70000)
    assert {"name", "ssh_port"} <= set(info.value.message_dict)


def test_only_admins_add_hosts(people: People, keys: KeyDesk) -> None:
    key = keys.keys[("10.0.0.8", 2222)] = fake_host_key()
    for user in (people.olga, people.alice, people.vic):
        with pytest.raises(PermissionDenied):
            add_host(people, key, created_by=user)
    assert keys.calls == 0


def test_local_host_needs_no_key(people: People, keys: KeyDesk) -> None:
    added = host_create(
        name="here", address="localhost", transport=Host.Transport.LOCAL, created_by=people.ada
    )
    assert not added.key_pinned and keys.calls == 0
    assert isinstance(transport_for(added), LocalTransport)


# -- re-pinning after a reinstall ----------------------------------------------------------------


def test_rescan_shows_a_new_key_and_pinning_it_needs_its_fingerprint(
    people: People, host: Host, keys: KeyDesk
) -> None:
    new = keys.keys[(host.address, host.ssh_port)] = fake_host_key()
    old_fingerprint = host.host_key_fingerprint
    assert host_rescan_key(host=host, actor=people.ada) == new
    host.refresh_from_db()
    assert host.host_key_fingerprint == old_fingerprint  # still the pinned one
    assert host.presented_fingerprint == new.fingerprint_sha256
    with pytest.raises(ValidationError, match="changed since you looked"):
        host_pin_key(host=host, fingerprint=fake_host_key().fingerprint_sha256, actor=people.ada)
    with pytest.raises(PermissionDenied):
        host_pin_key(host=host, fingerprint=new.fingerprint_sha256, actor=people.olga)
    pinned = host_pin_key(host=host, fingerprint=new.fingerprint_sha256, actor=people.ada)
    assert pinned.host_key == f"{new.key_type} {new.base64}"
    event = AuditEvent.objects.filter(kind="host.key_pinned").get()
    assert event.payload == {
        "fingerprint": new.fingerprint_sha256,
        "previous_fingerprint": old_fingerprint,
    }


# -- transport_for -------------------------------------------------------------------------


def test_transport_for_uses_the_pinned_key_and_key_file(host: Host) -> None:
    t = transport_for(host)
    assert isinstance(t, SSHTransport)
    assert (t.host, t.port, t.username) == ("10.0.0.7", 22, "root")
    assert t.pinned_fingerprint == host.host_key_fingerprint
    assert t.key_filename == "/etc/specadmin/id_ed25519" and not t.use_agent


def test_transport_for_agent_auth(host: Host) -> None:
    host.auth = Host.Auth.AGENT
    t = transport_for(host)
    assert isinstance(t, SSHTransport) and t.use_agent and t.key_filename is None


def test_transport_for_refuses_an_unpinned_host(host: Host) -> None:
    host.host_key = ""
    with pytest.raises(HostNotReady, match="not pinned"):
        transport_for(host)


def test_transport_for_refuses_key_file_auth_without_a_path(host: Host) -> None:
    host.key_file = ""
    with pytest.raises(HostNotReady, match="no key file path"):
        transport_for(host)


# -- probing -------------------------------------------------------------------------------


def test_probe_button_enqueues_after_commit(
    people: People, host: Host, enqueued: Enqueued, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        host_request_probe(host=host, actor=people.olga)
    assert enqueued.probes == [(host.pk, people.olga.pk)]
    with pytest.raises(PermissionDenied):
        host_request_probe(host=host, actor=people.vic)
    host.host_key = ""
    with pytest.raises(ValidationError, match="Pin the host key"):
        host_request_probe(host=host, actor=people.ada)
    assert len(enqueued.probes) == 1


def test_a_job_ends_and_its_host_is_probed_again_unless_it_cannot_be(
    host: Host, enqueued: Enqueued, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        assert services.host_probe_after_job(host_id=host.pk)
    host.refresh_from_db()
    assert enqueued.probes == [(host.pk, None)] and host.probe_queued_at is not None
    unpinned = Host.objects.create(name="gpu9", address="10.0.0.9", host_key="")
    archived = Host.objects.create(name="gpu8", address="127.0.0.1", archived=True)
    with django_capture_on_commit_callbacks(execute=True):
        assert not services.host_probe_after_job(host_id=unpinned.pk)
        assert not services.host_probe_after_job(host_id=archived.pk)
    assert len(enqueued.probes) == 1


class ScriptedTransport(Transport):
    """Answers argv by its first words; records what ran."""

    def __init__(self, answers: dict[str, tuple[int, str, str]], gpus: Any) -> None:
        self.answers = answers
        self.gpus = gpus
        self.ran: list[list[str]] = []

    def _run(
        self, argv: Sequence[str], *, timeout: float | None = None, input: bytes | None = None
    ) -> CommandResult:
        self.ran.append(list(argv))
        for prefix, (code, out, err) in self.answers.items():
            if " ".join(argv).startswith(prefix):
                return CommandResult(code, out.encode(), err.encode(), 0.01)
        return CommandResult(127, b"", f"{argv[0]}: not found".encode(), 0.01)

    def gpu_status(self) -> list[GpuInfo]:
        if isinstance(self.gpus, Exception):
            raise self.gpus
        return self.gpus

    def _read_file(self, path: str, limit: int, partial: bool) -> bytes | None:
        raise NotImplementedError

    def _stage_file(self, path: str, data: bytes, mode: int) -> StagedFile:
        raise NotImplementedError

    def _commit_file(self, staged: StagedFile) -> None:
        raise NotImplementedError

    def _remove_file(self, path: str) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        pass


H200 = "NVIDIA H200"


def scripted(**overrides: Any) -> ScriptedTransport:
    answers = {
        "systemctl --version": (0, "systemd 252 (252.39-1~deb12u1)\n+PAM +AUDIT\n", ""),
        "/opt/vllm/bin/vllm --version": (0, "INFO 01-01 loading plugins\n0.16.0\n", ""),
        # hostops.executables: the path resolves to itself, every component root's 0755
        "realpath -e -- /opt/vllm/bin/vllm": (0, "/opt/vllm/bin/vllm\n", ""),
        "id -u": (0, "0\n", ""),
        "stat -c": (
            0,
            "41ed 0 0 /\n41ed 0 0 /opt\n41ed 0 0 /opt/vllm\n41ed 0 0 /opt/vllm/bin\n"
            "81ed 0 0 /opt/vllm/bin/vllm\n",
            "",
        ),
        "find /etc/systemd/system": (
            0,
            f"/etc/systemd/system/vllm-a.service\t{MANAGED_MARKER} from profile vllm-a: edit"
            " the profile, not this file.\n",
            "",
        ),
        # deploys.running: the sha256 of every unit file the probe knows of
        "sha256sum --": (
            1,
            f"{'ab' * 32}  /etc/systemd/system/vllm-a.service\n",
            "sha256sum: /etc/systemd/system/vllm-gone.service: No such file or directory\n",
        ),
    }
    answers.update(overrides.pop("answers", {}))
    gpus = [
        GpuInfo(1, H200, "GPU-1", memory_used_mib=1000, memory_total_mib=143771),
        GpuInfo(0, H200, "GPU-0", memory_used_mib=0, memory_total_mib=143771),
    ]
    return ScriptedTransport(answers, overrides.pop("gpus", gpus))


def test_probe_reads_versions_gpus_and_managed_units(host: Host) -> None:
    t = scripted()
    facts = probe_host(
        host=host,
        transport=t,
        vllm_executables=["/opt/vllm/bin/vllm"],
        unit_names=["vllm-gone"],
    )
    assert facts["systemd_version"] == 252
    assert facts["vllm_version"] == "0.16.0"
    assert facts["gpu_count"] == 2
    assert [g["index"] for g in facts["gpus"]] == [0, 1]
    assert facts["gpus"][1]["memory_free_mib"] == 142771
    assert facts["managed_units"] == [{"name": "vllm-a.service", "profile": "vllm-a"}]
    assert facts["unit_files"] == [
        {"name": "vllm-a.service", "sha256": "ab" * 32},
        {"name": "vllm-gone.service", "sha256": ""},
    ]
    assert facts["errors"] == []
    find = next(argv for argv in t.ran if argv[0] == "find")
    assert find[-2:] == ["{}", "+"]  # argv, no shell glob or pipeline


def test_probe_records_missing_facts_without_failing(host: Host) -> None:
    t = scripted(
        gpus=GpuUnavailable("nvidia-smi failed (exit 127)"),
        answers={"/opt/vllm/bin/vllm --version": (127, "", "vllm: not found")},
    )
    facts = probe_host(host=host, transport=t, vllm_executables=["/opt/vllm/bin/vllm"])
    assert facts["vllm_version"] == "" and facts["gpu_count"] is None
    assert facts["systemd_version"] == 252
    assert any(
        e.startswith("vLLM version: /opt/vllm/bin/vllm --version exited 127")
        for e in facts["errors"]
    )
    assert any("nvidia-smi failed" in e for e in facts["errors"])


def test_vllm_version_of_a_venv_python_comes_from_the_package() -> None:
    assert vllm_version_argv("/opt/venv/bin/python3") == [
        "/opt/venv/bin/python3",
        "-c",
        "import vllm; print(vllm.__version__)",
    ]
    assert vllm_version_argv("/opt/vllm/bin/vllm") == ["/opt/vllm/bin/vllm", "--version"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.16.0\n", "0.16.0"),
        ("WARNING something 1.2\n0.11.0+cu129\n", "0.11.0+cu129"),
        ("0.8.5.post1", "0.8.5.post1"),
        ("Traceback …\nModuleNotFoundError: No module named 'vllm'\n", ""),
    ],
)
def test_parse_vllm_version(text: str, expected: str) -> None:
    assert parse_vllm_version(text) == expected


def test_parse_systemd_version() -> None:
    assert parse_systemd_version("systemd 257 (257.7-1)\n+PAM") == 257
    assert parse_systemd_version("bash: systemctl: not found") is None


def test_recording_a_probe_saves_facts_and_audits(
    people: People, host: Host, run_probe: Callable[..., dict[str, Any]]
) -> None:
    facts = run_probe(host)
    saved = host_record_probe(host=host, facts=facts, actor=people.olga)
    assert (saved.systemd_version, saved.vllm_version, saved.gpu_count) == (252, "0.16.0", 2)
    assert saved.managed_units[0]["name"] == "vllm-a.service"
    assert saved.probed_at is not None and saved.probe_error == ""
    event = AuditEvent.objects.get(kind="host.probed")
    assert event.payload["managed_units"] == ["vllm-a.service"]
    failed = host_record_probe_error(host=host, error="host key mismatch …", actor=None)
    assert failed.probe_error == "host key mismatch …" and failed.vllm_version == "0.16.0"
    assert AuditEvent.objects.filter(kind="host.probe_failed").count() == 1


@pytest.fixture
def run_probe() -> Callable[..., dict[str, Any]]:
    def run(host: Host) -> dict[str, Any]:
        return probe_host(host=host, transport=scripted(), vllm_executables=["/opt/vllm/bin/vllm"])

    return run


def test_a_probe_that_fails_in_an_unexpected_way_is_recorded_and_no_longer_queued(
    host: Host,
) -> None:
    """Not only connection errors: any failure ends the wait and is audited like a
    probe result (a host left "probe queued" for ever helps no one)."""
    Host.objects.filter(pk=host.pk).update(probe_queued_at=timezone.now())
    broken = ValueError("invalid literal for int() with base 10: '12ab'")
    answer = runner.run_probe(host.pk, None, connect=lambda h: scripted(gpus=broken))
    host.refresh_from_db()
    assert host.probe_queued_at is None
    assert host.probe_error == "ValueError: invalid literal for int() with base 10: '12ab'"
    assert answer["error"] == host.probe_error
    event = AuditEvent.objects.get(kind="host.probe_failed", object_id=str(host.pk))
    assert event.payload == {"error": host.probe_error}
