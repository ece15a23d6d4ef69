"""`manage.py loaddemo`: the demo accounts the README names (an admin, and an approver so
the tour can approve the admin's deploy request: never the requester), the roles, and the
seed deployment's two profiles (idempotent; `make run` calls it).

Demo data only: a database with any user besides the demo accounts is a real one, and
loaddemo refuses it (exit 1; `--skip-if-real-users` makes that a one-line note and exit 0,
which is what `make run` uses), so a known password never lands in a real installation.
Every run says plainly that the demo account is for the demo only.

The profiles are the seed's Kimi-K2.5 INT4 baseline and the n-gram variant that was cloned
beside it (so the baseline stayed available as the fallback). Existing rows are left
unchanged: running it again never adds versions or overwrites an operator's edits. On the
throwaway test host the vLLM double makes the variant slower than the baseline, as the
seed measured it (n-gram k=5 about 13% at 1 stream; docs/sweeps.md): a sweep or trial of
the demo ends "slower".
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from hostops.gpu_free import DEFAULT_THRESHOLD_MIB
from units.models import ServiceProfile
from units.roles import APPROVER, ensure_roles
from units.services import profile_clone, profile_create, profile_update

DEMO_USERNAME = "admin"
DEMO_PASSWORD = "specadmin-demo"
APPROVER_USERNAME = "approver"
APPROVER_PASSWORD = "specadmin-approve"
# Every account loaddemo may create; any other user makes the database a real one.
DEMO_USERNAMES = (DEMO_USERNAME, APPROVER_USERNAME)

BASELINE_NAME = "vllm-kimi-k25-int4"
NGRAM_NAME = "vllm-kimi-k25-int4-ngram"
BASELINE: dict[str, Any] = {
    "name": BASELINE_NAME,
    "description": "Kimi-K2.5 INT4 (8 GPUs, TP 8, expert parallel)",
    "vllm_executable": "/opt/vllm/bin/vllm",
    "model": "/models/Kimi-K2.5-INT4",
    "served_model_names": ["kimi-k2.5"],
    "host": "0.0.0.0",
    "port": 8000,
    "tensor_parallel_size": 8,
    "gpu_devices": "0,1,2,3,4,5,6,7",
    "gpu_memory_utilization": "0.92",
    "max_model_len": "128k",
    "max_num_seqs": 64,
    "quantization": "compressed-tensors",
    "kv_cache_dtype": "fp8",
    "trust_remote_code": True,
    "enable_expert_parallel": True,
    "user": "vllm",
    "group": "vllm",
    "restart": "on-failure",
    "restart_sec": 10,
    "timeout_start_sec": 1800,
    "timeout_stop_sec": 120,
    "gpu_free_wait": True,
    "gpu_free_wait_sec": 300,
    "gpu_free_threshold_mib": DEFAULT_THRESHOLD_MIB,
    "target_vllm_version": "0.16.0",
    "target_systemd_version": 252,
}
NGRAM_CHANGES: dict[str, Any] = {
    "description": "Kimi-K2.5 INT4 with n-gram speculative decoding (8 GPUs, TP 8)",
    "spec_method": "ngram",
    "spec_num_tokens": 5,
    "spec_prompt_lookup_max": 4,
}


class Command(BaseCommand):
    help = (
        "Load demo data (idempotent): demo admin and approver, roles, the seed's two "
        "Kimi-K2.5 profiles."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--skip-if-real-users",
            action="store_true",
            help="on a database with real users, say so and exit 0 instead of failing",
        )

    def handle(self, *args: object, skip_if_real_users: bool = False, **options: object) -> None:
        user_model = get_user_model()
        real = list(
            user_model.objects.exclude(username__in=DEMO_USERNAMES)
            .order_by("username")
            .values_list("username", flat=True)[:5]
        )
        if real:
            message = (
                f"this database has real users ({', '.join(real)}): loaddemo only fills a "
                "demo database with its demo account and known password; nothing was changed"
            )
            if skip_if_real_users:
                self.stdout.write(f"loaddemo skipped: {message}")
                return
            raise CommandError(message, returncode=1)
        user, created = user_model.objects.get_or_create(
            username=DEMO_USERNAME, defaults={"is_staff": True, "is_superuser": True}
        )
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save()
            self.stdout.write(f"created demo admin {DEMO_USERNAME!r}")
        else:
            self.stdout.write(f"demo admin {DEMO_USERNAME!r} already exists (left unchanged)")
        roles = ensure_roles()
        self.stdout.write("roles: viewer, operator, approver, admin")
        approver, created = user_model.objects.get_or_create(username=APPROVER_USERNAME)
        if created:
            approver.set_password(APPROVER_PASSWORD)
            approver.save()
            approver.groups.add(roles[APPROVER])
            self.stdout.write(f"created demo approver {APPROVER_USERNAME!r}")
        with transaction.atomic():
            self._profiles(user)
        self.stdout.write(
            self.style.WARNING(
                f"DEMO ONLY: log in as {DEMO_USERNAME} / {DEMO_PASSWORD}; approve deploy "
                f"requests as {APPROVER_USERNAME} / {APPROVER_PASSWORD}. These accounts and "
                "passwords are published in the README: before real use, create your own "
                "superuser (manage.py createsuperuser) and delete both."
            )
        )

    def _profiles(self, user: Any) -> None:
        baseline = ServiceProfile.objects.filter(name=BASELINE_NAME).first()
        if baseline is None:
            baseline = profile_create(
                data=BASELINE, created_by=user, comment="Seed deployment's baseline"
            )
            self.stdout.write(f"created profile {BASELINE_NAME}")
        else:
            self.stdout.write(f"profile {BASELINE_NAME} already exists (left unchanged)")
        if ServiceProfile.objects.filter(name=NGRAM_NAME).exists():
            self.stdout.write(f"profile {NGRAM_NAME} already exists (left unchanged)")
            return
        variant = profile_clone(profile=baseline, new_name=NGRAM_NAME, created_by=user)
        profile_update(
            profile=variant,
            data=NGRAM_CHANGES,
            updated_by=user,
            comment="n-gram speculative decoding (5 tokens, prompt lookup max 4)",
        )
        self.stdout.write(f"created profile {NGRAM_NAME} (cloned from {BASELINE_NAME})")
