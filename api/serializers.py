"""What the API returns and takes. Reads mask secrets for people who may not see them,
as the web pages do (`units.masking`); inputs are bounded (docs/api.md, "Limits")."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers

from api.models import ApiToken
from audit.models import AuditEvent
from deploys.models import DeployRequest, Host, JobStep
from perf.models import BenchRun
from units.masking import can_see_secrets, mask_data, mask_line, mask_text
from units.models import ProfileVersion, ServiceProfile
from units.profile_data import profile_data
from units.rendering import MAX_UNIT_BYTES

MAX_NAME = 247


def _sees(serializer: serializers.Serializer) -> bool:
    request = serializer.context.get("request")
    return request is not None and can_see_secrets(request.user)


def _user(user: Any) -> str:
    return user.get_username() if user is not None else ""


class ProfileSerializer(serializers.ModelSerializer):
    latest_version = serializers.SerializerMethodField()

    class Meta:
        model = ServiceProfile
        fields = [
            "id",
            "name",
            "description",
            "archived",
            "target_vllm_version",
            "target_systemd_version",
            "latest_version",
        ]

    def get_latest_version(self, profile: ServiceProfile) -> int | None:
        return getattr(profile, "latest_number", None)


class ProfileDetailSerializer(ProfileSerializer):
    data = serializers.SerializerMethodField()

    class Meta(ProfileSerializer.Meta):
        fields = [*ProfileSerializer.Meta.fields, "data"]

    def get_data(self, profile: ServiceProfile) -> dict[str, Any]:
        data = profile_data(profile)
        return data if _sees(self) else mask_data(data)


class VersionSerializer(serializers.ModelSerializer):
    profile = serializers.CharField(source="profile.name")
    created_by = serializers.SerializerMethodField()

    class Meta:
        model = ProfileVersion
        fields = [
            "profile",
            "number",
            "unit_sha256",
            "changed_fields",
            "comment",
            "created_by",
            "created_at",
        ]

    def get_created_by(self, version: ProfileVersion) -> str:
        return _user(version.created_by)


class VersionDetailSerializer(VersionSerializer):
    data = serializers.SerializerMethodField()
    unit_text = serializers.SerializerMethodField()

    class Meta(VersionSerializer.Meta):
        fields = [*VersionSerializer.Meta.fields, "data", "unit_text"]

    def get_data(self, version: ProfileVersion) -> dict[str, Any]:
        return version.data if _sees(self) else mask_data(version.data)

    def get_unit_text(self, version: ProfileVersion) -> str:
        return version.unit_text if _sees(self) else mask_text(version.unit_text)


class HostSerializer(serializers.ModelSerializer):
    class Meta:
        model = Host
        fields = [
            "id",
            "name",
            "address",
            "transport",
            "archived",
            "systemd_version",
            "vllm_version",
            "gpu_count",
            "gpus",
            "managed_units",
            "foreign_vllm_units",
            "probed_at",
            "probe_error",
            "host_key_fingerprint",
            "restarts_without_approval",
        ]


class RequestSerializer(serializers.ModelSerializer):
    profile = serializers.SerializerMethodField()
    version = serializers.SerializerMethodField()
    host = serializers.CharField(source="host.name")
    status_label = serializers.CharField()
    requested_by = serializers.SerializerMethodField()
    decided_by = serializers.SerializerMethodField()
    web_url = serializers.SerializerMethodField()
    status_reason = serializers.SerializerMethodField()

    class Meta:
        model = DeployRequest
        fields = [
            "id",
            "kind",
            "profile",
            "version",
            "host",
            "unit_name",
            "unit_sha256",
            "status",
            "status_label",
            "status_reason",
            "requested_by",
            "requested_at",
            "expires_at",
            "decided_by",
            "decided_at",
            "started_at",
            "finished_at",
            "last_step",
            "web_url",
        ]

    def get_profile(self, request: DeployRequest) -> str:
        version = request.profile_version
        return version.profile.name if version is not None else ""

    def get_version(self, request: DeployRequest) -> int | None:
        version = request.profile_version
        return version.number if version is not None else None

    def get_requested_by(self, request: DeployRequest) -> str:
        return _user(request.requested_by)

    def get_decided_by(self, request: DeployRequest) -> str:
        return _user(request.decided_by)

    def get_status_reason(self, request: DeployRequest) -> str:
        return request.status_reason if _sees(self) else mask_text(request.status_reason)

    def get_web_url(self, request: DeployRequest) -> str:
        """The request's page, where a person approves it."""
        path = reverse("deploys:request_detail", args=[request.pk])
        http = self.context.get("request")
        return http.build_absolute_uri(path) if http is not None else path


class StepSerializer(serializers.ModelSerializer):
    log = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    result = serializers.SerializerMethodField()

    class Meta:
        model = JobStep
        fields = [
            "name",
            "phase",
            "status",
            "started_at",
            "finished_at",
            "log",
            "progress",
            "result",
        ]

    def get_log(self, step: JobStep) -> str:
        return step.log if _sees(self) else mask_text(step.log)

    def get_progress(self, step: JobStep) -> dict[str, Any]:
        progress = dict(step.progress or {})
        if not _sees(self) and progress.get("message"):
            progress["message"] = mask_line(str(progress["message"]))
        return progress

    def get_result(self, step: JobStep) -> dict[str, Any]:
        result = dict(step.result or {})
        if not _sees(self) and result.get("reason"):
            result["reason"] = mask_line(str(result["reason"]))
        return result


class BenchRunSerializer(serializers.ModelSerializer):
    profile = serializers.CharField(source="profile.name")
    version = serializers.SerializerMethodField()
    host = serializers.CharField(source="host.name")

    class Meta:
        model = BenchRun
        fields = [
            "id",
            "profile",
            "version",
            "host",
            "request_id",
            "engine",
            "incomplete",
            "output_tok_s",
            "ttft_p50_ms",
            "tpot_p50_ms",
            "acceptance_rate",
            "verdict",
            "gate",
            "created_at",
        ]

    def get_version(self, run: BenchRun) -> int | None:
        return run.profile_version.number if run.profile_version is not None else None


class JobSerializer(RequestSerializer):
    """A request as a job: its steps (live while it runs) and its benchmark verdicts."""

    steps = serializers.SerializerMethodField()
    benchmarks = serializers.SerializerMethodField()
    done = serializers.SerializerMethodField()
    succeeded = serializers.SerializerMethodField()
    regressed = serializers.SerializerMethodField()

    class Meta(RequestSerializer.Meta):
        fields = [
            *RequestSerializer.Meta.fields,
            "host_state",
            "done",
            "succeeded",
            "regressed",
            "steps",
            "benchmarks",
        ]

    def get_steps(self, request: DeployRequest) -> list[dict[str, Any]]:
        steps = request.steps.order_by("pk")
        return StepSerializer(steps, many=True, context=self.context).data  # type: ignore[return-value]

    def get_benchmarks(self, request: DeployRequest) -> list[dict[str, Any]]:
        runs = BenchRun.objects.filter(request=request).select_related(
            "profile", "profile_version", "host"
        )
        return BenchRunSerializer(runs.order_by("pk"), many=True, context=self.context).data  # type: ignore[return-value]

    def get_done(self, request: DeployRequest) -> bool:
        return request.status not in LIVE_OR_WAITING

    def get_succeeded(self, request: DeployRequest) -> bool:
        return request.status == DeployRequest.Status.SUCCEEDED

    def get_regressed(self, request: DeployRequest) -> bool:
        return BenchRun.objects.filter(request=request, verdict=BenchRun.Verdict.REGRESSED).exists()


LIVE_OR_WAITING = frozenset(
    {DeployRequest.Status.PENDING, DeployRequest.Status.APPROVED, DeployRequest.Status.RUNNING}
)


class EventSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "at",
            "actor_name",
            "kind",
            "object_type",
            "object_id",
            "object_repr",
            "host_name",
            "profile_name",
            "payload",
        ]


# -- inputs --------------------------------------------------------------------------------


class UnitTextSerializer(serializers.Serializer):
    filename = serializers.CharField(max_length=MAX_NAME + 8)
    text = serializers.CharField(max_length=MAX_UNIT_BYTES, trim_whitespace=False)


class NewVersionSerializer(serializers.Serializer):
    """Either `data` (fields; missing ones keep their values) or `unit_text`."""

    data = serializers.DictField(required=False)
    unit_text = serializers.CharField(
        required=False, max_length=MAX_UNIT_BYTES, trim_whitespace=False
    )
    comment = serializers.CharField(required=False, max_length=500, allow_blank=True, default="")
    base_version = serializers.IntegerField(required=False, min_value=1, max_value=2**31 - 1)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("data" in attrs) == ("unit_text" in attrs):
            raise serializers.ValidationError("Give either “data” or “unit_text”.")
        return attrs


class NewProfileSerializer(serializers.Serializer):
    data = serializers.DictField()
    comment = serializers.CharField(required=False, max_length=500, allow_blank=True, default="")


class LintSerializer(serializers.Serializer):
    filename = serializers.CharField(max_length=MAX_NAME + 8, default="unit.service")
    text = serializers.CharField(max_length=MAX_UNIT_BYTES, trim_whitespace=False)
    systemd_version = serializers.IntegerField(required=False, min_value=1, max_value=100_000)
    vllm_version = serializers.CharField(required=False, max_length=30)


class NewRequestSerializer(serializers.Serializer):
    profile = serializers.CharField(max_length=MAX_NAME)
    version = serializers.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    host = serializers.CharField(max_length=100)
    unit_name = serializers.CharField(
        required=False, max_length=MAX_NAME, allow_blank=True, default=""
    )
    acknowledge_warnings = serializers.BooleanField(default=False)


class NewCandidateSerializer(serializers.Serializer):
    profile = serializers.CharField(max_length=MAX_NAME)
    version = serializers.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    unit_name = serializers.CharField(
        required=False, max_length=MAX_NAME, allow_blank=True, default=""
    )


class NewTrialSerializer(serializers.Serializer):
    """A trial: candidates tried one by one in place of `production_unit` on `host`, each
    gated against production's baseline there, production put back (docs/trials.md)."""

    host = serializers.CharField(max_length=100)
    production_unit = serializers.CharField(max_length=MAX_NAME)
    candidates = serializers.ListField(
        child=NewCandidateSerializer(), allow_empty=False, max_length=16
    )
    promote_threshold = serializers.FloatField(required=False, allow_null=True, default=None)
    keep = serializers.BooleanField(default=False)
    acknowledge_warnings = serializers.BooleanField(default=False)


class TokenSerializer(serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = ["name", "scope", "prefix", "created_at", "expires_at", "last_used_at"]
