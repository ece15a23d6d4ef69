"""Notifications: an outbox of messages to people (e-mail, webhooks), delivered by a worker
with retries (docs/notifications.md)."""
