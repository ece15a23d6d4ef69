"""Profile pages: list, create, edit with live preview, clone, archive, history, compare.

Views are thin: reads go through `units.selectors`, writes through `units.services` (which
validate, lint-gate and version every change); a service's ValidationError is shown at
the form fields it names. Permissions are Django model permissions granted by the role
groups (`units.roles`), checked here, never by group name.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from specadmin.access import requires
from units import selectors, services
from units.field_texts import LABELS
from units.forms import CloneForm, ProfileFilterForm, ProfileForm, method_fields
from units.masking import can_see_secrets, mask_data, mask_preview, mask_text
from units.models import ProfileVersion, ServiceProfile
from units.preview import GENERAL, Issue, build_preview, error_count, first_problem
from units.profile_data import is_ascii_digits, profile_data
from units.unicode_text import split_lines

VIEW = "units.view_serviceprofile"
VIEW_VERSIONS = "units.view_profileversion"
ADD = "units.add_serviceprofile"
CHANGE = "units.change_serviceprofile"
PAGE_SIZE = 50
# What the list shows; nothing else is read (5,000 profiles must list fast).
LIST_COLUMNS = (
    "id",
    "name",
    "description",
    "model",
    "spec_method",
    "target_vllm_version",
    "tensor_parallel_size",
    "port",
    "archived",
    "updated_at",
)


def can_edit(user: Any) -> bool:
    return user.has_perm(CHANGE)


def _profile(pk: int) -> ServiceProfile:
    return get_object_or_404(ServiceProfile, pk=pk)


# -- list ------------------------------------------------------------------------------


@require_GET
@requires(VIEW)
def profile_list(request: HttpRequest) -> HttpResponse:
    """Search, filters and 50-per-page pagination; htmx requests get only the results."""
    filters = ProfileFilterForm(request.GET)
    profiles = selectors.profile_list(**filters.selector_kwargs()).only(*LIST_COLUMNS)
    page = Paginator(profiles, PAGE_SIZE).get_page(request.GET.get("page"))
    partial = bool(request.htmx) and not request.htmx.history_restore_request
    template = "units/_list_results.html" if partial else "units/list.html"
    response = render(
        request,
        template,
        {"filters": filters, "page": page, "can_add": request.user.has_perm(ADD)},
    )
    patch_vary_headers(response, ("HX-Request",))
    return response


# -- one profile -----------------------------------------------------------------------


@require_GET
@requires(VIEW)
def profile_detail(request: HttpRequest, pk: int) -> HttpResponse:
    profile = get_object_or_404(ServiceProfile.objects.select_related("cloned_from"), pk=pk)
    latest = selectors.profile_latest_version(profile=profile)
    origin_latest = (
        selectors.profile_latest_version(profile=profile.cloned_from)
        if profile.cloned_from
        else None
    )
    return render(
        request,
        "units/detail.html",
        {
            "profile": profile,
            "latest": latest,
            "origin_latest": origin_latest,
            "preview": _for(request.user, build_preview(profile_data(profile))),
            "can_edit": can_edit(request.user),
            "can_add": request.user.has_perm(ADD),
        },
    )


def _merge_form_errors(form: ProfileForm, issues: dict[str, list[Issue]]) -> None:
    """Add the save's errors (the services' verdict) that the preview does not show yet."""
    for key, errors in form.errors.items():  # non-field errors' key "__all__" is GENERAL
        shown = set()
        for issue in issues.get(key, []):
            shown.update({issue.message, f"{issue.message} ({issue.code})"})
        new = [Issue("error", message) for message in errors if message not in shown]
        issues[key] = new + issues.get(key, [])


def _touched(value: str | None) -> set[str] | None:
    """The `touched` field of a new profile's form: the fields typed in so far (their
    problems are shown), or `*` / absent for all."""
    if value is None or value.strip() == "*":
        return None
    return {name for name in value.split(",") if name}


def _form_page(
    request: HttpRequest,
    form: ProfileForm,
    *,
    profile: ServiceProfile | None,
    status: int = 200,
    conflict: list[tuple[str, str, str]] | None = None,
) -> HttpResponse:
    """The edit page. A blank new profile shows no problems until fields are touched; a
    refused save (400) shows all of them, says that nothing was saved and puts the cursor
    in the first field with a problem."""
    blank = profile is None and not form.is_bound
    preview = build_preview(form.to_data(), form.shape_errors(), shown=set() if blank else None)
    issues = dict(preview.issues)
    if form.is_bound:
        _merge_form_errors(form, issues)
    refused = None
    if status == 400:
        refused = {"count": error_count(issues), "first": first_problem(issues)}
        first = refused["first"]
        if first is not None and first.field in form.fields:
            form.fields[first.field].widget.attrs["autofocus"] = "autofocus"
    touched = None if profile is not None else ("" if blank else "*")
    return render(
        request,
        "units/edit.html",
        {
            "form": form,
            "profile": profile,
            "sections": form.sections(issues),
            "preview": preview,
            "general_issues": issues.get(GENERAL, []),
            "method_fields": method_fields(),
            "conflict": conflict,
            "refused": refused,
            "touched": touched,
        },
        status=status,
    )


@require_http_methods(["GET", "POST"])
@requires(ADD)
def profile_create(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _form_page(request, ProfileForm(), profile=None)
    form = ProfileForm(request.POST)
    if form.is_valid():
        try:
            profile = services.profile_create(
                data=form.to_data(),
                created_by=request.user,
                comment=form.cleaned_data["comment"],
            )
        except ValidationError as exc:
            form.add_service_error(exc)
        else:
            messages.success(request, f"Created {profile.unit_name} (version 1).")
            return redirect("units:detail", pk=profile.pk)
    return _form_page(request, form, profile=None, status=400)


@require_http_methods(["GET", "POST"])
@requires(CHANGE)
def profile_edit(request: HttpRequest, pk: int) -> HttpResponse:
    profile = _profile(pk)
    if profile.archived:
        messages.error(request, f"{profile.name} is archived: unarchive it before editing.")
        return redirect("units:detail", pk=profile.pk)
    if request.method == "GET":
        return _form_page(request, ProfileForm(profile=profile), profile=profile)
    form = ProfileForm(request.POST, profile=profile)
    if form.is_valid():
        try:
            version = services.profile_update(
                profile=profile,
                data=form.to_data(),
                updated_by=request.user,
                comment=form.cleaned_data["comment"],
                base_version=form.cleaned_data.get("base_version"),
            )
        except services.StaleEdit as exc:
            return _conflict_page(request, form, profile=profile, stale=exc)
        except ValidationError as exc:
            form.add_service_error(exc)
        else:
            if version is None:
                messages.info(request, "Nothing changed: no new version was saved.")
            else:
                fields = ", ".join(LABELS.get(f, f) for f in version.changed_fields)
                messages.success(request, f"Saved version {version.number} ({fields}).")
            return redirect("units:detail", pk=profile.pk)
    return _form_page(request, form, profile=profile, status=400)


def _conflict_page(
    request: HttpRequest, form: ProfileForm, *, profile: ServiceProfile, stale: Any
) -> HttpResponse:
    """The user's inputs again, the other person's change beside them, and the newer
    version as the form's base: saving now is a decision made having seen it."""
    data = request.POST.copy()
    data["base_version"] = str(stale.latest.number)
    again = ProfileForm(data, profile=profile)
    again.is_valid()
    again.add_error(None, stale)
    see = can_see_secrets(request.user)
    changes = [
        (LABELS.get(k, k), *(_show(v if see else mask_data({k: v})[k]) for v in (old, new)))
        for k, old, new in selectors.version_field_diff(stale.base, stale.latest)
    ]
    return _form_page(request, again, profile=profile, status=409, conflict=changes)


@require_POST
@login_required
def profile_preview(request: HttpRequest) -> HttpResponse:
    """Render + lint the posted form for the live preview. Never saves: it only reads."""
    if not (request.user.has_perm(ADD) or request.user.has_perm(CHANGE)):
        raise PermissionDenied
    profile = None
    profile_id = object_id(request.POST.get("profile_id", ""))
    if profile_id is not None:
        profile = ServiceProfile.objects.filter(pk=profile_id).first()
    form = ProfileForm(request.POST, profile=profile)
    shown = _touched(request.POST.get("touched")) if profile is None else None
    preview = build_preview(form.to_data(), form.shape_errors(), shown=shown)
    return render(
        request, "units/_preview.html", {"preview": preview, "oob": True, "link_fields": True}
    )


@require_http_methods(["GET", "POST"])
@requires(ADD)
def profile_clone(request: HttpRequest, pk: int) -> HttpResponse:
    source = get_object_or_404(ServiceProfile, pk=pk)
    form = CloneForm(request.POST or None, initial={"new_name": f"{source.name}-variant"})
    if request.method == "POST" and form.is_valid():
        try:
            clone = services.profile_clone(
                profile=source,
                new_name=form.cleaned_data["new_name"].strip(),
                created_by=request.user,
            )
        except ValidationError as exc:
            errors = exc.message_dict if hasattr(exc, "error_dict") else {"name": exc.messages}
            for name, texts in errors.items():
                for text in texts:
                    if name == "name":
                        form.add_error("new_name", text)
                    else:
                        form.add_error(None, f"{LABELS.get(name, name)}: {text}")
        else:
            messages.success(
                request, f"Created the variant {clone.name} beside {source.name}; edit it now."
            )
            return redirect("units:edit", pk=clone.pk)
    status = 400 if form.is_bound else 200
    return render(request, "units/clone.html", {"form": form, "profile": source}, status=status)


@require_POST
@requires(CHANGE)
def profile_archive(request: HttpRequest, pk: int) -> HttpResponse:
    profile = services.profile_archive(profile=_profile(pk), archived_by=request.user)
    messages.success(request, f"Archived {profile.name}; its history is kept.")
    return redirect("units:detail", pk=profile.pk)


@require_POST
@requires(CHANGE)
def profile_unarchive(request: HttpRequest, pk: int) -> HttpResponse:
    profile = services.profile_unarchive(profile=_profile(pk), unarchived_by=request.user)
    messages.success(request, f"{profile.name} is active again.")
    return redirect("units:detail", pk=profile.pk)


# -- versions --------------------------------------------------------------------------


@require_GET
@requires(VIEW, VIEW_VERSIONS)
def version_history(request: HttpRequest, pk: int) -> HttpResponse:
    profile = get_object_or_404(ServiceProfile, pk=pk)
    versions = selectors.profile_versions(profile=profile).only(
        "id",
        "profile_id",
        "number",
        "changed_fields",
        "comment",
        "created_at",
        "created_by__username",
    )
    page = Paginator(versions, PAGE_SIZE).get_page(request.GET.get("page"))
    rows = [
        (
            v,
            ", ".join(LABELS.get(f, f) for f in v.changed_fields[:8])
            + (f" and {len(v.changed_fields) - 8} more" if len(v.changed_fields) > 8 else ""),
        )
        for v in page
    ]
    latest_number = page.object_list[0].number if page.number == 1 and rows else None
    return render(
        request,
        "units/history.html",
        {
            "profile": profile,
            "page": page,
            "rows": rows,
            "latest_number": latest_number,
            "can_edit": can_edit(request.user) and not profile.archived,
        },
    )


# The largest id a BigAutoField holds: past it SQLite raises OverflowError (a 500) for a
# lookup through a foreign key, where Django's own range check does not apply.
MAX_ROW_ID = 2**63 - 1


def _version(pk: int, number: int) -> ProfileVersion:
    if pk > MAX_ROW_ID or number > MAX_ROW_ID:
        raise Http404("No such version.")
    return get_object_or_404(
        ProfileVersion.objects.select_related("profile", "created_by"),
        profile_id=pk,
        number=number,
    )


@require_GET
@requires(VIEW, VIEW_VERSIONS)
def version_detail(request: HttpRequest, pk: int, number: int) -> HttpResponse:
    version = _version(pk, number)
    latest = selectors.profile_latest_version(profile=version.profile)
    see = can_see_secrets(request.user)
    data = version.data if see else mask_data(version.data)
    settings = [(LABELS.get(k, k), _show(data[k])) for k, _ in selectors.version_settings(version)]
    return render(
        request,
        "units/version.html",
        {
            "version": version,
            "profile": version.profile,
            "settings": settings,
            "lines": list(
                enumerate(
                    split_lines(version.unit_text if see else mask_text(version.unit_text)), 1
                )
            ),
            "is_latest": latest is not None and latest.pk == version.pk,
            "can_edit": can_edit(request.user) and not version.profile.archived,
            "authors": selectors.version_author_names(version),
        },
    )


@require_POST
@requires(CHANGE)
def version_restore(request: HttpRequest, pk: int, number: int) -> HttpResponse:
    """Make an old version current again as a NEW version (history only grows)."""
    version = _version(pk, number)
    before = selectors.profile_latest_version(profile=version.profile)
    try:
        new = services.profile_restore_version(version=version, restored_by=request.user)
    except ValidationError as exc:
        messages.error(request, f"Version {number} cannot be restored: {' '.join(exc.messages)}")
    else:
        if before is not None and new.pk == before.pk:
            messages.info(request, f"Version {number} matches the current settings already.")
        else:
            messages.success(request, f"Restored version {number} as version {new.number}.")
    return redirect("units:history", pk=pk)


def object_id(text: str) -> int | None:
    """A row id from a query string or form, or None: only ASCII digits, and no more than
    a 64-bit id holds (`int()` of 5,000 digits raises; past 2**63 the database does)."""
    if not is_ascii_digits(text) or len(text) > 18:
        return None
    return int(text)


def _for(user: Any, preview: Any) -> Any:
    """The preview as `user` may see it (secrets masked for viewers: units.masking)."""
    return preview if can_see_secrets(user) else mask_preview(preview)


def _show(value: Any) -> str:
    """A setting as the form writes it."""
    if value is None or value == "" or value == [] or value == {}:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    if isinstance(value, dict):  # sorted, as the unit and the form show them
        return "\n".join(f"{k}={v}" for k, v in sorted(value.items()))
    return str(value)


def _diff_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "file"
    return {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "")


def _chosen_versions(query: Any) -> tuple[list[int], str]:
    """The version ids of `?a=…&b=…`, or what is wrong with them in words (then no ids)."""
    texts = {"A": query.get("a", ""), "B": query.get("b", "")}
    missing = [side for side, text in texts.items() if not text]
    needs = "a comparison needs two, A (from) and B (to)."
    if len(missing) == 2:
        return [], f"No versions were chosen: {needs}"
    if missing:
        return [], f"Version {missing[0]} was not chosen: {needs}"
    ids = []
    for side, text in texts.items():
        found = object_id(text)
        if found is None:
            shown = text if len(text) <= 20 else text[:20] + "…"
            return [], f'{side}="{shown}" is not a version id (a whole number).'
        ids.append(found)
    return ids, ""


@require_GET
@requires(VIEW, VIEW_VERSIONS)
def version_compare(request: HttpRequest) -> HttpResponse:
    """Any two versions, of one profile or of a variant and its original: field diff
    table and unified diff of the units (`?a=VERSION_ID&b=VERSION_ID`)."""
    ids, problem = _chosen_versions(request.GET)
    if problem:
        return render(request, "units/compare_choose.html", {"problem": problem}, status=400)
    found = ProfileVersion.objects.select_related("profile", "created_by").in_bulk(ids)
    a, b = found.get(ids[0]), found.get(ids[1])
    if a is None or b is None:
        raise Http404("No such version.")
    see = can_see_secrets(request.user)
    fields = [
        (LABELS.get(k, k), _show(old), _show(new))
        if see
        else (LABELS.get(k, k), _show(mask_data({k: old})[k]), _show(mask_data({k: new})[k]))
        for k, old, new in selectors.version_field_diff(a, b)
    ]
    diff = selectors.version_unit_diff(a, b, str if see else mask_text)
    return render(
        request,
        "units/compare.html",
        {
            "a": a,
            "b": b,
            "fields": fields,
            "diff_lines": [(_diff_class(line), line) for line in split_lines(diff)],
        },
    )
