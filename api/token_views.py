"""The API tokens page: a person's own tokens (make one, see it once, revoke), and for
an admin everyone's (revoke). Session only, like every web page."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from api.models import ApiToken
from api.tokens import DEFAULT_DAYS, MANAGE_ANY, MAX_DAYS, MAX_NAME, token_create, token_revoke


class TokenForm(forms.Form):
    name = forms.CharField(max_length=MAX_NAME, help_text="What uses it, e.g. “ci-main”.")
    scope = forms.ChoiceField(choices=ApiToken.Scope.choices, initial=ApiToken.Scope.READ)
    days = forms.IntegerField(
        min_value=1, max_value=MAX_DAYS, initial=DEFAULT_DAYS, label="Valid for (days)"
    )


def _page(request: HttpRequest, form: TokenForm, new_secret: str = "") -> HttpResponse:
    own = ApiToken.objects.filter(user=request.user)
    context: dict[str, Any] = {"form": form, "tokens": own, "new_secret": new_secret}
    if request.user.has_perm(MANAGE_ANY):
        context["others"] = ApiToken.objects.exclude(user=request.user).select_related("user")
    return render(request, "api/tokens.html", context)


@login_required
def token_list(request: HttpRequest) -> HttpResponse:
    """GET: the page; POST: make a token, shown once on the answer (never stored)."""
    if request.method != "POST":
        return _page(request, TokenForm())
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _page(request, form)
    try:
        made = token_create(
            user=request.user,
            name=form.cleaned_data["name"],
            scope=form.cleaned_data["scope"],
            days=form.cleaned_data["days"],
        )
    except ValidationError as exc:
        for field, errors in exc.message_dict.items():
            for error in errors:
                form.add_error(field if field in form.fields else None, error)
        return _page(request, form)
    response = _page(request, TokenForm(), new_secret=made.secret)
    response["Cache-Control"] = "no-store"  # the token is on this page only
    return response


@login_required
@require_POST
def token_revoke_view(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=pk)
    token_revoke(token=token, actor=request.user)  # PermissionDenied: the 403 page
    messages.success(request, f"The token “{token.name}” is revoked.")
    return redirect("api:tokens")
