"""API tokens: one person's named, scoped, expiring, revocable credential for CI.

Only the token's SHA-256 is stored (and its first characters, to tell tokens apart on a
page): the token itself is shown once, when it is made (docs/api.md, "Tokens"). A token
is 32 random bytes, so a plain hash suffices (no salt or slow hash: nothing to guess)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiToken(models.Model):
    class Scope(models.TextChoices):
        READ = "read", "Read: list and read"
        REQUEST = "request", "Request: read, push versions, lint, request deploys"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.READ)
    key_sha256 = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)  # "sa_" and the first characters, shown
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    # The last read recorded in the audit history (reads are audited once an hour per
    # token: docs/api.md, "What is audited").
    last_read_audited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="unique_api_token_name")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    @property
    def expired(self) -> bool:
        return self.expires_at <= timezone.now()

    @property
    def usable(self) -> bool:
        return not self.revoked and not self.expired
