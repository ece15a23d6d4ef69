"""vLLM service profiles and their immutable versions.

A `ServiceProfile` row holds the *current* settings (so lists can filter and search
them); every save also appends a `ProfileVersion` with a snapshot of all settings, the
rendered unit text and its hash. Versions are never changed or deleted: history is how
operators answer "what ran, and who changed it".
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from units.names import validate_unit_name
from units.schema import bounds_of, default_of

RESTART_CHOICES = [
    ("no", "no"),
    ("on-failure", "on-failure"),
    ("on-abnormal", "on-abnormal"),
    ("always", "always"),
]


def _range(name: str) -> list:
    """The model's validators for a field's bounds (units.schema)."""
    bounds = bounds_of(name)
    return [MinValueValidator(bounds.low), MaxValueValidator(bounds.high)]


class ServiceProfile(models.Model):
    """One vLLM service, described once, rendered into a systemd unit."""

    # identity
    name = models.CharField(
        max_length=247,
        unique=True,
        validators=[validate_unit_name],
        help_text="Unit name without .service, e.g. vllm-kimi-k25-int4",
    )
    description = models.CharField(max_length=200, blank=True)
    # what runs
    vllm_executable = models.CharField(
        max_length=500, help_text="Absolute path to `vllm`, or to a venv's python"
    )
    model = models.CharField(max_length=500, help_text="Model path or Hugging Face ID")
    served_model_names = models.JSONField(default=default_of("served_model_names"), blank=True)
    host = models.CharField(max_length=100, default=default_of("host"))
    port = models.PositiveIntegerField(default=default_of("port"), validators=_range("port"))
    tensor_parallel_size = models.PositiveIntegerField(
        default=default_of("tensor_parallel_size"), validators=_range("tensor_parallel_size")
    )
    gpu_devices = models.CharField(
        max_length=2000,
        blank=True,
        help_text="CUDA_VISIBLE_DEVICES: comma-separated indices or GPU UUIDs (empty: all)",
    )
    gpu_memory_utilization = models.DecimalField(
        max_digits=4,
        decimal_places=3,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.001")), MaxValueValidator(Decimal("1"))],
    )
    max_model_len = models.CharField(max_length=20, blank=True, help_text="e.g. 32768 or 32k")
    max_num_seqs = models.PositiveIntegerField(null=True, blank=True)
    quantization = models.CharField(max_length=50, blank=True)
    kv_cache_dtype = models.CharField(max_length=30, blank=True)
    trust_remote_code = models.BooleanField(default=default_of("trust_remote_code"))
    enable_expert_parallel = models.BooleanField(default=default_of("enable_expert_parallel"))
    # speculative decoding (method-specific fields; see units/speculative.py)
    spec_method = models.CharField(max_length=50, blank=True)
    spec_num_tokens = models.PositiveIntegerField(null=True, blank=True)
    spec_prompt_lookup_min = models.PositiveIntegerField(null=True, blank=True)
    spec_prompt_lookup_max = models.PositiveIntegerField(null=True, blank=True)
    spec_draft_model = models.CharField(max_length=500, blank=True)
    spec_draft_tensor_parallel_size = models.PositiveIntegerField(null=True, blank=True)
    extra_args = models.JSONField(default=default_of("extra_args"), blank=True)
    # What an imported unit had that no field describes, kept as written (units.importing;
    # docs/unit-import.md): ExecStart= words in unit syntax, the command line's order, and
    # more unit lines.
    extra_args_verbatim = models.JSONField(default=default_of("extra_args_verbatim"), blank=True)
    command_layout = models.JSONField(default=default_of("command_layout"), blank=True)
    unit_extra = models.JSONField(default=default_of("unit_extra"), blank=True)
    environment = models.JSONField(default=default_of("environment"), blank=True)
    # Secrets (HF_TOKEN, VLLM_API_KEY for --api-key, …) stay on the host in this file;
    # the unit names it with EnvironmentFile= and specadmin never reads or shows it.
    environment_file = models.CharField(
        max_length=500,
        blank=True,
        help_text="File on the host with NAME=value lines (EnvironmentFile=)",
    )
    # how systemd runs it
    user = models.CharField(max_length=64, blank=True)
    group = models.CharField(max_length=64, blank=True)
    working_directory = models.CharField(max_length=500, blank=True)
    restart = models.CharField(
        max_length=20, choices=RESTART_CHOICES, default=default_of("restart")
    )
    restart_sec = models.PositiveIntegerField(default=default_of("restart_sec"))
    timeout_start_sec = models.PositiveIntegerField(
        default=default_of("timeout_start_sec"),
        help_text="Seconds; model loading of large MoE models takes long",
    )
    timeout_stop_sec = models.PositiveIntegerField(default=default_of("timeout_stop_sec"))
    gpu_free_wait = models.BooleanField(
        default=default_of("gpu_free_wait"), help_text="Before start, wait until every GPU is free"
    )
    gpu_free_wait_sec = models.PositiveIntegerField(default=default_of("gpu_free_wait_sec"))
    gpu_free_threshold_mib = models.PositiveIntegerField(
        default=default_of("gpu_free_threshold_mib")
    )
    # how specadmin's deploy job restarts it (deploys/jobs: GPU-clean stop, journal check,
    # readiness, rollback); the GPU-clean step uses gpu_free_threshold_mib above
    deploy_gpu_clean_sec = models.PositiveIntegerField(
        default=default_of("deploy_gpu_clean_sec"),
        help_text="After the stop: seconds to get every GPU clean, kills included",
    )
    deploy_kill_grace_sec = models.PositiveIntegerField(
        default=default_of("deploy_kill_grace_sec"),
        help_text="SIGTERM → SIGKILL for the service's leftover GPU processes",
    )
    deploy_kill_foreign = models.BooleanField(
        default=default_of("deploy_kill_foreign"),
        help_text="Also kill other people's processes on the service's GPUs",
    )
    deploy_journal_check_sec = models.PositiveIntegerField(
        default=default_of("deploy_journal_check_sec"),
        help_text="After the start: seconds the journal is watched for fatal errors",
    )
    deploy_ready_timeout_sec = models.PositiveIntegerField(
        default=default_of("deploy_ready_timeout_sec"),
        help_text="Seconds the model may take to load before /health answers",
    )
    deploy_rollback = models.BooleanField(
        default=default_of("deploy_rollback"),
        help_text="Put the previous unit back when the new one fails",
    )
    # linting targets
    target_vllm_version = models.CharField(max_length=20, default=default_of("target_vllm_version"))
    target_systemd_version = models.PositiveIntegerField(
        default=default_of("target_systemd_version")
    )
    # bookkeeping
    archived = models.BooleanField(default=False)
    cloned_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="variants"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        indexes = [
            models.Index(fields=["archived", "name"]),
            models.Index(fields=["spec_method"]),
            models.Index(fields=["target_vllm_version"]),
        ]

    def __str__(self) -> str:
        return self.unit_name

    @property
    def unit_name(self) -> str:
        return f"{self.name}.service"

    def delete(self, *args: object, **kwargs: object):  # type: ignore[override]
        raise ValidationError("Profiles are archived, never deleted: their history must stay.")


# Every setting that belongs to a version snapshot (bookkeeping fields excluded).
PROFILE_FIELDS: tuple[str, ...] = tuple(
    f.name
    for f in ServiceProfile._meta.local_fields
    if f.name not in {"id", "archived", "cloned_from", "created_at", "updated_at"}
)


class ProfileVersionQuerySet(models.QuerySet):
    def update(self, **kwargs: object) -> int:
        raise ValidationError("Profile versions are immutable.")

    def delete(self):  # type: ignore[override]
        raise ValidationError("Profile versions are immutable.")


class ProfileVersion(models.Model):
    """An immutable snapshot: the settings, the unit they render to, who and when."""

    profile = models.ForeignKey(ServiceProfile, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    data = models.JSONField()
    unit_text = models.TextField()
    unit_sha256 = models.CharField(max_length=64)
    changed_fields = models.JSONField(default=list)
    comment = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The version whose settings this one copies whole: a restored version, or the source
    # of a clone (None: written here, as an edit of the version before it).
    copied_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Everyone who wrote any part of these settings (user ids, sorted): the author of an
    # edit plus the authors of the version it edits; a copy carries the authors of what
    # it copies plus the person who copied (docs/operations.md, "Four eyes").
    authors = models.JSONField(default=list)

    objects = ProfileVersionQuerySet.as_manager()

    class Meta:
        ordering = ["profile", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["profile", "number"], name="unique_version_number")
        ]

    def __str__(self) -> str:
        return f"{self.profile.name} v{self.number}"

    @property
    def brought_by(self) -> set[int]:
        """Who wrote what this version changes compared with the one before it: its
        author for an edit; for a copy (restore, clone) also everyone who wrote the copied
        settings, since the copy puts their text back."""
        own = {self.created_by_id} if self.created_by_id is not None else set()
        return own | set(self.authors) if self.copied_from_id is not None else own

    def save(self, *args: object, **kwargs: object) -> None:
        if self.pk is not None:
            raise ValidationError("Profile versions are immutable.")
        super().save(*args, **kwargs)  # type: ignore[arg-type]

    def delete(self, *args: object, **kwargs: object):  # type: ignore[override]
        raise ValidationError("Profile versions are immutable.")


class UnitImport(models.Model):
    """A unit file imported into a profile (units.importing): the text as given, where it
    came from, and whether the rendered unit runs the same commands (docs/unit-import.md).
    The same text under the same unit name is imported once."""

    unit_name = models.CharField(max_length=256)
    sha256 = models.CharField(max_length=64)
    original_text = models.TextField()
    source = models.CharField(max_length=300, blank=True, help_text="file name or upload")
    host_name = models.CharField(max_length=100, blank=True)
    profile = models.ForeignKey(ServiceProfile, on_delete=models.PROTECT, related_name="imports")
    version = models.ForeignKey(ProfileVersion, on_delete=models.PROTECT, related_name="+")
    argv_equal = models.BooleanField()
    environment_equal = models.BooleanField()
    differences = models.JSONField(default=list)
    notes = models.JSONField(default=list)
    # Other settings the rendered unit gives another value (no command depends on them).
    setting_differences = models.JSONField(default=list)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["unit_name", "sha256"], name="unique_unit_import")
        ]

    def __str__(self) -> str:
        return f"{self.unit_name} → {self.profile.name} v{self.version.number}"
