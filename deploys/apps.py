"""Hosts, transports, deploy requests, approvals and the deploy jobs."""

from django.apps import AppConfig


class DeploysConfig(AppConfig):
    name = "deploys"
    default_auto_field = "django.db.models.BigAutoField"
