"""The API's endpoints (docs/api.md): thin views over the selectors and services the web
pages use, with the same permissions. No endpoint approves, rejects or decides anything:
that stays a person's act in the web UI."""

from __future__ import annotations

from typing import Any

from django.db.models import Max, QuerySet
from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError as BadInput
from rest_framework.mixins import ListModelMixin
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers as s
from api.authentication import token_of
from api.base import ApiView
from audit.models import AuditEvent
from audit.selectors import HistoryFilters, audit_event_list
from deploys.models import DeployRequest, Host
from deploys.permissions import REQUEST_DEPLOY, VIEW_HOST, VIEW_REQUEST
from deploys.selectors import deploy_request_list, host_list
from deploys.services.deploy_requests import deploy_request_create
from deploys.services.trial_requests import Candidate, trial_request_create
from linting.engine import lint_text
from linting.options import LintOptions
from linting.reporters.json_report import file_json
from linting.systemd.catalog import UnknownSystemdVersion
from linting.vllm.catalog import UnknownVllmVersion, available_versions
from perf.models import BenchRun
from units.importing.service import import_unit, import_unit_version
from units.models import ProfileVersion, ServiceProfile
from units.selectors import profile_latest_version
from units.services import profile_create, profile_update

VIEW_PROFILE = "units.view_serviceprofile"
VIEW_VERSION = "units.view_profileversion"
ADD_PROFILE = "units.add_serviceprofile"
CHANGE_PROFILE = "units.change_serviceprofile"
VIEW_BENCH = "perf.view_benchrun"
VIEW_HISTORY = "audit.view_auditevent"
_TEXT_PARAM = 200


def _param(request: Request, name: str) -> str:
    """A query parameter, bounded; "" when absent."""
    return str(request.query_params.get(name, ""))[:_TEXT_PARAM]


def _int_param(request: Request, name: str) -> int | None:
    text = _param(request, name)
    if not text:
        return None
    if not text.isascii() or not text.isdigit() or len(text) > 12:
        raise BadInput({name: ["A whole number."]})
    return int(text)


def _with_latest(qs: QuerySet[ServiceProfile]) -> QuerySet[ServiceProfile]:
    return qs.annotate(latest_number=Max("versions__number"))


def _profile(name: str) -> ServiceProfile:
    return get_object_or_404(_with_latest(ServiceProfile.objects.all()), name=name)


# -- profiles and versions -----------------------------------------------------------------


class ProfileList(ListModelMixin, ApiView):
    """Profiles (archived ones with `?archived=1`); POST: a new profile from fields."""

    read_perms = (VIEW_PROFILE,)
    write_perms = (ADD_PROFILE,)
    serializer_class = s.ProfileSerializer

    @extend_schema(parameters=[OpenApiParameter("search", str), OpenApiParameter("archived", bool)])
    def get(self, request: Request) -> Response:
        return self.list(request)

    def get_queryset(self) -> QuerySet[ServiceProfile]:
        archived = _param(self.request, "archived").lower() in ("1", "true", "yes")
        qs = _with_latest(ServiceProfile.objects.filter(archived=archived)).order_by("name")
        search = _param(self.request, "search")
        return qs.filter(name__icontains=search) if search else qs

    @extend_schema(request=s.NewProfileSerializer, responses={201: s.VersionDetailSerializer})
    def post(self, request: Request) -> Response:
        given = s.NewProfileSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        profile = profile_create(
            data=given.validated_data["data"],
            created_by=request.user,
            comment=given.validated_data["comment"] or "Created through the API",
        )
        version = profile.versions.get()
        self.audited = {"profile": profile.name, "version": version.number}
        return Response(
            s.VersionDetailSerializer(version, context=self.get_serializer_context()).data,
            status=status.HTTP_201_CREATED,
        )


class ProfileDetail(ApiView):
    read_perms = (VIEW_PROFILE,)
    serializer_class = s.ProfileDetailSerializer

    def get(self, request: Request, name: str) -> Response:
        return Response(self.get_serializer(_profile(name)).data)


class VersionList(ListModelMixin, ApiView):
    """A profile's versions, newest first; POST: a new version from fields (`data`,
    missing fields keep their values) or from a unit file (`unit_text`, mapped as the
    import maps it; the same text again returns its version)."""

    read_perms = (VIEW_PROFILE, VIEW_VERSION)
    write_perms = (CHANGE_PROFILE,)
    serializer_class = s.VersionSerializer

    def get(self, request: Request, name: str) -> Response:
        return self.list(request)

    def get_queryset(self) -> QuerySet[ProfileVersion]:
        profile = _profile(self.kwargs["name"])
        qs = ProfileVersion.objects.filter(profile=profile).select_related("profile", "created_by")
        return qs.order_by("-number")

    @extend_schema(
        request=s.NewVersionSerializer,
        responses={
            200: s.VersionDetailSerializer,
            201: s.VersionDetailSerializer,
        },
    )
    def post(self, request: Request, name: str) -> Response:
        profile = _profile(name)
        given = s.NewVersionSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        values = given.validated_data
        created = True
        if "unit_text" in values:
            result = import_unit_version(
                profile=profile, text=values["unit_text"], actor=request.user
            )
            version, created = result.version, result.created
        else:
            made = profile_update(
                profile=profile,
                data=values["data"],
                updated_by=request.user,
                comment=values["comment"] or "Saved through the API",
                base_version=values.get("base_version"),
            )
            version = made or profile_latest_version(profile=profile)
            created = made is not None
        self.audited = {"profile": profile.name, "version": version.number, "created": created}
        return Response(
            s.VersionDetailSerializer(version, context=self.get_serializer_context()).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class VersionDetail(ApiView):
    read_perms = (VIEW_PROFILE, VIEW_VERSION)
    serializer_class = s.VersionDetailSerializer

    def get(self, request: Request, name: str, number: int) -> Response:
        version = get_object_or_404(
            ProfileVersion.objects.select_related("profile", "created_by"),
            profile__name=name,
            number=number,
        )
        return Response(self.get_serializer(version).data)


_IMPORTED = inline_serializer(
    "Imported",
    {
        "profile": serializers.CharField(),
        "version": serializers.IntegerField(),
        "created": serializers.BooleanField(),
        "argv_equal": serializers.BooleanField(),
        "environment_equal": serializers.BooleanField(),
        "differences": serializers.ListField(child=serializers.CharField()),
        "notes": serializers.ListField(child=serializers.CharField()),
    },
)


class ImportUnit(ApiView):
    """A new profile from a hand-written unit file (docs/unit-import.md)."""

    write_perms = (ADD_PROFILE,)
    serializer_class = s.UnitTextSerializer

    @extend_schema(request=s.UnitTextSerializer, responses={200: _IMPORTED, 201: _IMPORTED})
    def post(self, request: Request) -> Response:
        given = s.UnitTextSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        result = import_unit(
            text=given.validated_data["text"],
            filename=given.validated_data["filename"],
            actor=request.user,
        )
        record = result.record
        self.audited = {"profile": result.profile.name, "version": result.version.number}
        return Response(
            {
                "profile": result.profile.name,
                "version": result.version.number,
                "created": result.created,
                "argv_equal": record.argv_equal,
                "environment_equal": record.environment_equal,
                "differences": record.differences,
                "notes": record.notes,
            },
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )


class Lint(ApiView):
    """Lint one unit text, as `lintunits --format json` reports it (one file)."""

    read_perms = (VIEW_PROFILE,)
    read_only_post = True
    serializer_class = s.LintSerializer

    @extend_schema(
        request=s.LintSerializer,
        responses=inline_serializer(
            "LintReport",
            {
                "file": serializers.DictField(),
                "summary": serializers.DictField(child=serializers.IntegerField()),
                "notes": serializers.ListField(child=serializers.CharField()),
                "blocking": serializers.BooleanField(),
            },
        ),
    )
    def post(self, request: Request) -> Response:
        given = s.LintSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        values = given.validated_data
        vllm = values.get("vllm_version")
        if vllm and vllm not in available_versions():
            raise BadInput({"vllm_version": [f"No catalog for vLLM {vllm}."]})
        options = LintOptions(systemd_version=values.get("systemd_version"), vllm_version=vllm)
        name = values["filename"].replace("\\", "/").rsplit("/", 1)[-1] or "unit.service"
        try:
            report = lint_text(values["text"], name, options)
        except UnknownVllmVersion as exc:
            raise BadInput({"vllm_version": [str(exc)]}) from exc
        except UnknownSystemdVersion as exc:
            raise BadInput({"systemd_version": [str(exc)]}) from exc
        counts = report.counts()
        self.audited = {"linted": name, "errors": counts.get("error", 0)}
        return Response(
            {
                "file": file_json(report.files[0]) if report.files else {},
                "summary": counts,
                "notes": report.notes(),
                "blocking": counts.get("error", 0) > 0,
            }
        )


# -- hosts, requests, jobs -----------------------------------------------------------------


class HostList(ListModelMixin, ApiView):
    read_perms = (VIEW_HOST,)
    serializer_class = s.HostSerializer

    def get(self, request: Request) -> Response:
        return self.list(request)

    def get_queryset(self) -> QuerySet[Host]:
        return host_list(archived=None).order_by("name")


class HostDetail(ApiView):
    read_perms = (VIEW_HOST,)
    serializer_class = s.HostSerializer

    def get(self, request: Request, name: str) -> Response:
        return Response(self.get_serializer(get_object_or_404(Host, name=name)).data)


def _requests() -> QuerySet[DeployRequest]:
    return DeployRequest.objects.select_related(
        "profile_version__profile", "host", "requested_by", "decided_by"
    )


class RequestList(ListModelMixin, ApiView):
    """Requests, newest first (`?status=`, `?host=`, `?profile=`); POST: request a deploy
    of a profile's version (its latest by default) to a host. A person approves it in
    the web UI (`web_url`)."""

    read_perms = (VIEW_REQUEST,)
    write_perms = (VIEW_REQUEST, REQUEST_DEPLOY)
    serializer_class = s.RequestSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str),
            OpenApiParameter("host", str),
            OpenApiParameter("profile", str),
        ]
    )
    def get(self, request: Request) -> Response:
        return self.list(request)

    def get_queryset(self) -> QuerySet[DeployRequest]:
        request = self.request
        qs = deploy_request_list(status=_param(request, "status")).select_related(
            "profile_version__profile", "host", "requested_by", "decided_by"
        )
        if _param(request, "host"):
            qs = qs.filter(host__name=_param(request, "host"))
        if _param(request, "profile"):
            qs = qs.filter(profile_version__profile__name=_param(request, "profile"))
        return qs.order_by("-pk")

    @extend_schema(request=s.NewRequestSerializer, responses={201: s.RequestSerializer})
    def post(self, request: Request) -> Response:
        given = s.NewRequestSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        values = given.validated_data
        profile = _profile(values["profile"])
        number = values.get("version") or profile.latest_number
        version = get_object_or_404(ProfileVersion, profile=profile, number=number)
        host = get_object_or_404(Host, name=values["host"])
        created = deploy_request_create(
            profile_version=version,
            host=host,
            requested_by=request.user,
            unit_name=values["unit_name"],
            acknowledge_warnings=values["acknowledge_warnings"],
        )
        self.audited = {"request": created.pk, "profile": profile.name, "version": number}
        return Response(
            s.RequestSerializer(created, context=self.get_serializer_context()).data,
            status=status.HTTP_201_CREATED,
        )


class TrialList(ApiView):
    """POST: request a trial (candidate versions tried in place of a unit running on a
    host, production put back; docs/trials.md). A person approves it in the web UI
    (`web_url`); the result is read as a job (`/api/v1/jobs/<id>/`)."""

    write_perms = (VIEW_REQUEST, REQUEST_DEPLOY)
    serializer_class = s.RequestSerializer

    @extend_schema(request=s.NewTrialSerializer, responses={201: s.RequestSerializer})
    def post(self, request: Request) -> Response:
        given = s.NewTrialSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        values = given.validated_data
        host = get_object_or_404(Host, name=values["host"])
        candidates = [_candidate(c) for c in values["candidates"]]
        created = trial_request_create(
            host=host,
            candidates=candidates,
            requested_by=request.user,
            production_unit=values["production_unit"],
            promote_threshold=values["promote_threshold"],
            keep=values["keep"],
            acknowledge_warnings=values["acknowledge_warnings"],
        )
        self.audited = {
            "request": created.pk,
            "candidates": [f"{c.version.profile.name} v{c.version.number}" for c in candidates],
        }
        return Response(
            s.RequestSerializer(created, context=self.get_serializer_context()).data,
            status=status.HTTP_201_CREATED,
        )


def _candidate(given: dict[str, Any]) -> Candidate:
    profile = _profile(given["profile"])
    number = given.get("version") or profile.latest_number
    version = get_object_or_404(ProfileVersion, profile=profile, number=number)
    return Candidate(version, unit_name=given["unit_name"])


class RequestDetail(ApiView):
    read_perms = (VIEW_REQUEST,)
    serializer_class = s.RequestSerializer

    def get(self, request: Request, pk: int) -> Response:
        return Response(self.get_serializer(get_object_or_404(_requests(), pk=pk)).data)


class JobDetail(ApiView):
    """A request's job: state, steps (read live while it runs), benchmark verdicts;
    `done`, `succeeded` and `regressed` are what a pipeline waits for."""

    read_perms = (VIEW_REQUEST,)
    serializer_class = s.JobSerializer

    def get(self, request: Request, pk: int) -> Response:
        return Response(self.get_serializer(get_object_or_404(_requests(), pk=pk)).data)


# -- benchmarks, history, who am I ---------------------------------------------------------


class BenchRunList(ListModelMixin, ApiView):
    read_perms = (VIEW_BENCH,)
    serializer_class = s.BenchRunSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter("profile", str),
            OpenApiParameter("host", str),
            OpenApiParameter("request", int),
        ]
    )
    def get(self, request: Request) -> Response:
        return self.list(request)

    def get_queryset(self) -> QuerySet[BenchRun]:
        request = self.request
        qs = BenchRun.objects.select_related("profile", "profile_version", "host")
        if _param(request, "profile"):
            qs = qs.filter(profile__name=_param(request, "profile"))
        if _param(request, "host"):
            qs = qs.filter(host__name=_param(request, "host"))
        wanted = _int_param(request, "request")
        if wanted is not None:
            qs = qs.filter(request_id=wanted)
        return qs.order_by("-pk")


class History(ListModelMixin, ApiView):
    """The audit history, newest first, with the history page's filters."""

    read_perms = (VIEW_HISTORY,)
    serializer_class = s.EventSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter("host", str),
            OpenApiParameter("profile", str),
            OpenApiParameter("user", str),
            OpenApiParameter("kind", str),
            OpenApiParameter("after", int, description="only events after this id"),
        ]
    )
    def get(self, request: Request) -> Response:
        return self.list(request)

    def get_queryset(self) -> QuerySet[AuditEvent]:
        request = self.request
        filters = HistoryFilters(
            host=_param(request, "host"),
            profile=_param(request, "profile"),
            user=_param(request, "user"),
            kind=_param(request, "kind"),
        )
        qs = audit_event_list(filters=filters)
        after = _int_param(request, "after")
        return qs.filter(id__gt=after) if after is not None else qs


class Me(ApiView):
    """Who the API takes the caller for: user, token, scope, permissions."""

    @extend_schema(
        responses=inline_serializer(
            "Me",
            {
                "user": serializers.CharField(),
                "token": serializers.CharField(allow_null=True),
                "scope": serializers.CharField(allow_null=True),
                "expires_at": serializers.DateTimeField(allow_null=True),
                "permissions": serializers.ListField(child=serializers.CharField()),
            },
        )
    )
    def get(self, request: Request) -> Response:
        token = token_of(request)
        data: dict[str, Any] = {
            "user": request.user.get_username(),
            "token": token.name if token else None,
            "scope": token.scope if token else None,
            "expires_at": token.expires_at if token else None,
            "permissions": sorted(request.user.get_all_permissions()),
        }
        return Response(data)


def no_such_route(request: HttpRequest) -> JsonResponse:
    """A path under /api/v1/ that names no endpoint: the API's error shape, not a page."""
    return JsonResponse(
        {"detail": "No such API route (paths end with “/”; see /api/v1/schema/)."}, status=404
    )
