"""The outbox (`Notification`, one per message and recipient channel), each delivery try
(`DeliveryAttempt`), and what each person wants to be told (`EmailSetting`, `Webhook`,
`HostMute`). docs/notifications.md says how they are used."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from deploys.models import Host
from notify.events import Event

# Bounds on what is stored (docs/notifications.md, "Bounds"): a message is for people, an
# error is the first lines of what went wrong.
SUBJECT_CHARS = 200
TEXT_CHARS = 4000
ERROR_CHARS = 2000
ADDRESS_CHARS = 2000
PAYLOAD_BYTES = 16_384


class Channel(models.TextChoices):
    EMAIL = "email", "E-mail"
    WEBHOOK = "webhook", "Webhook (JSON)"
    SLACK = "slack", "Webhook (Slack-compatible)"


class Notification(models.Model):
    """One message to one recipient channel; `state` says where its delivery is.

    pending (due at `next_attempt_at`) → sending (claimed by one worker until
    `claimed_until`) → delivered, or back to pending after a failed try, or dead once
    `attempts` reached the maximum (docs/notifications.md, "Delivery")."""

    class State(models.TextChoices):
        PENDING = "pending"
        SENDING = "sending"
        DELIVERED = "delivered"
        DEAD = "dead"

    event = models.CharField(max_length=32, choices=Event.choices)
    subject = models.CharField(max_length=SUBJECT_CHARS)
    text = models.TextField(max_length=TEXT_CHARS)
    payload = models.JSONField(default=dict, blank=True)
    channel = models.CharField(max_length=16, choices=Channel.choices)
    address = models.CharField(max_length=ADDRESS_CHARS)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    host = models.ForeignKey(
        Host, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    claimed_until = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(max_length=ERROR_CHARS, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="notify_due")]

    def __str__(self) -> str:
        return f"{self.get_event_display()} → {self.address} ({self.state})"


class DeliveryAttempt(models.Model):
    """One try at delivering a notification: how it went, how long it took."""

    class Status(models.TextChoices):
        DELIVERED = "delivered"
        FAILED = "failed"

    notification = models.ForeignKey(
        Notification, on_delete=models.CASCADE, related_name="delivery_attempts"
    )
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices)
    error = models.TextField(max_length=ERROR_CHARS, blank=True)

    class Meta:
        ordering = ["notification_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["notification", "number"], name="notify_attempt_once")
        ]

    def __str__(self) -> str:
        return f"try {self.number} of #{self.notification_id}: {self.status}"


class EmailSetting(models.Model):
    """Whether a person gets e-mail for one kind of event; no row means yes."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notify_email_settings"
    )
    event = models.CharField(max_length=32, choices=Event.choices)
    enabled = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "event"], name="notify_email_setting_once")
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.event}: {'on' if self.enabled else 'off'}"


class Webhook(models.Model):
    """A URL a person added. Without a host it receives what that person is told; with a
    host it receives that host's job and incident events, whoever they are for."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notify_webhooks"
    )
    url = models.URLField(max_length=ADDRESS_CHARS)
    slack = models.BooleanField(
        default=False, help_text="Send Slack's body ({\"text\": …}) instead of specadmin's JSON."
    )
    host = models.ForeignKey(
        Host, null=True, blank=True, on_delete=models.CASCADE, related_name="notify_webhooks"
    )
    events = models.JSONField(default=list, help_text="The event kinds it receives.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.url

    @property
    def event_labels(self) -> list[str]:
        labels = dict(Event.choices)
        return [str(labels.get(event, event)) for event in self.events]


class HostMute(models.Model):
    """A person hears nothing about this host (e-mail or their own webhooks)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notify_host_mutes"
    )
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "host"], name="notify_mute_once")]

    def __str__(self) -> str:
        return f"{self.user} mutes {self.host}"
