"""The import pages: paste or upload a unit file (`units:import`), then the import it
made (`units:import_detail`): the original and the rendered unit side by side, the argv
and environment check, what was kept verbatim, and the lint findings. Thin: the work is
`units.importing.service.import_unit`."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from specadmin.access import requires
from units.importing.service import import_unit
from units.linting import lint_rendered, profile_lint_options
from units.masking import can_see_secrets, mask_text
from units.models import UnitImport
from units.rendering import MAX_UNIT_BYTES
from units.unicode_text import split_lines

ADD = "units.add_serviceprofile"
VIEW = "units.view_serviceprofile"


class ImportForm(forms.Form):
    unit_file = forms.FileField(label="Unit file", required=False)
    text = forms.CharField(
        label="…or paste it",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false", "class": "mono"}),
    )
    filename = forms.CharField(
        label="File name",
        required=False,
        max_length=260,
        help_text="NAME.service: the profile's name (for a pasted unit; an upload has its own).",
        widget=forms.TextInput(attrs={"spellcheck": "false", "placeholder": "vllm-qwen.service"}),
    )

    def clean(self) -> dict:
        cleaned = super().clean()
        upload = cleaned.get("unit_file")
        # A textarea posts CRLF line ends (HTML's form submission rules); the unit as
        # written had LF: the same text as its file, so also the same import.
        cleaned["text"] = (cleaned.get("text") or "").replace("\r\n", "\n")
        if upload is not None:
            if upload.size > MAX_UNIT_BYTES:
                raise ValidationError(f"The file is larger than {MAX_UNIT_BYTES} bytes.")
            try:
                cleaned["text"] = upload.read().decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValidationError("The file is not UTF-8 text.") from exc
            cleaned["filename"] = cleaned.get("filename") or upload.name
        if not (cleaned.get("text") or "").strip():
            raise ValidationError("Choose a unit file or paste one.")
        if not (cleaned.get("filename") or "").strip():
            self.add_error("filename", "Name the unit (NAME.service): it is the profile's name.")
        return cleaned


@require_http_methods(["GET", "POST"])
@requires(ADD)
def unit_import(request: HttpRequest) -> HttpResponse:
    posted = request.method == "POST"
    form = ImportForm(request.POST if posted else None, request.FILES if posted else None)
    if request.method == "POST" and form.is_valid():
        try:
            result = import_unit(
                text=form.cleaned_data["text"],
                filename=form.cleaned_data["filename"],
                actor=request.user,
            )
        except PermissionDenied:
            raise
        except ValidationError as exc:
            for message in exc.messages:
                form.add_error(None, message)
        else:
            record = result.record
            if result.created:
                messages.success(request, f"Created {record.profile.name} (version 1).")
            else:
                messages.info(request, "This unit was imported before; nothing new was created.")
            return redirect("units:import_detail", pk=record.pk)
    status = 400 if form.is_bound else 200
    return render(request, "units/import.html", {"form": form}, status=status)


@require_GET
@requires(VIEW)
def unit_import_detail(request: HttpRequest, pk: int) -> HttpResponse:
    record = get_object_or_404(UnitImport.objects.select_related("profile", "version"), pk=pk)
    version = record.version
    name = f"{record.unit_name}.service"
    report = lint_rendered(version.unit_text, name, name, profile_lint_options(version.data))
    show = str if can_see_secrets(request.user) else mask_text
    return render(
        request,
        "units/import_detail.html",
        {
            "record": record,
            "profile": record.profile,
            "version": version,
            "original": list(enumerate(split_lines(show(record.original_text)), 1)),
            "rendered": list(enumerate(split_lines(show(version.unit_text)), 1)),
            "findings": report.findings,
        },
    )
