"""Hosts, deploy requests (with their approval) and the runs of deploy jobs.

State changes that matter for "exactly once" are made with conditional UPDATEs in
`deploys/services/` and `deploys/jobs/runner.py` (claim a row only while it is in the
expected state), never by read-modify-write in Python.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from deploys.probe_texts import NO_EXECUTABLE
from deploys.step_titles import step_title
from units.models import ProfileVersion
from units.names import validate_unit_name


class Host(models.Model):
    """A GPU host specadmin pushes units to. Credentials are never stored: only the path
    of a private key readable by the worker, or "use the SSH agent"."""

    class Transport(models.TextChoices):
        SSH = "ssh", "SSH"
        LOCAL = "local", "Local (worker runs on this host)"

    class Auth(models.TextChoices):
        KEY_FILE = "key_file", "Private key file readable by the worker"
        AGENT = "agent", "SSH agent of the worker"

    name = models.SlugField(max_length=100, unique=True)
    address = models.CharField(max_length=255, help_text="Hostname or IP address")
    ssh_port = models.PositiveIntegerField(
        default=22, validators=[MinValueValidator(1), MaxValueValidator(65535)]
    )
    username = models.CharField(max_length=64, default="root")
    transport = models.CharField(max_length=10, choices=Transport.choices, default=Transport.SSH)
    auth = models.CharField(max_length=10, choices=Auth.choices, default=Auth.KEY_FILE)
    key_file = models.CharField(max_length=500, blank=True, help_text="Path on the worker")
    # Host key: what the host presented when added, and what an admin confirmed (pinned).
    presented_host_key = models.TextField(blank=True)
    presented_fingerprint = models.CharField(max_length=100, blank=True)
    host_key = models.TextField(blank=True, help_text="Pinned public key (type base64)")
    host_key_fingerprint = models.CharField(max_length=100, blank=True)
    host_key_confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    host_key_confirmed_at = models.DateTimeField(null=True, blank=True)
    # Facts from the last probe; linting targets what the host really runs.
    systemd_version = models.PositiveIntegerField(null=True, blank=True)
    vllm_version = models.CharField(max_length=30, blank=True)
    gpu_count = models.PositiveIntegerField(null=True, blank=True)
    gpus = models.JSONField(default=list, blank=True)
    managed_units = models.JSONField(default=list, blank=True)
    # Unit files there that run vLLM and that specadmin did not write: what can be
    # imported into profiles (units.importing, deploys.services.unit_imports).
    foreign_vllm_units = models.JSONField(default=list, blank=True)
    # Executables the probe may run besides those of approved, pushed units: set by an
    # admin, audited (hostops.executables).
    probe_executables = models.JSONField(default=list, blank=True)
    # Set by an admin (audited): a restart of what is deployed here runs without a second
    # person's approval. Deploys, rollbacks and removals always need one.
    restarts_without_approval = models.BooleanField(default=False)
    probed_at = models.DateTimeField(null=True, blank=True)
    probe_error = models.TextField(blank=True)
    # Set when a probe is queued, cleared when its result (facts or error) is recorded: the
    # host page polls for the result while it is set.
    probe_queued_at = models.DateTimeField(null=True, blank=True)
    archived = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def probe_lines(self) -> list[tuple[str, str]]:
        """The last probe's messages, each with its weight: having no approved vLLM
        executable to ask (a host before its first deploy) is a note, the rest errors."""
        return [
            ("info" if line == NO_EXECUTABLE else "error", line)
            for line in self.probe_error.splitlines()
            if line.strip()
        ]

    @property
    def probe_failed(self) -> bool:
        return any(weight == "error" for weight, _ in self.probe_lines)

    @property
    def key_pinned(self) -> bool:
        return bool(self.host_key)


class DeployRequest(models.Model):
    """ "Deploy profile version V to host H (as unit U)", approved by someone else; or a
    restart of the unit deployed there, a rollback to an earlier deployed version, or the
    removal of the unit. The request is also its job: status, steps, host state."""

    class Kind(models.TextChoices):
        DEPLOY = "deploy", "Deploy"
        RESTART = "restart", "Restart"
        ROLLBACK = "rollback", "Roll back"
        REMOVE = "remove", "Remove"
        # Production stopped, candidates tried in its place one by one, production back
        # (deploys.jobs.trial; the candidates are TrialCandidate rows).
        TRIAL = "trial", "Trial"

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for approval"
        APPROVED = "approved", "Approved, queued"
        REJECTED = "rejected", "Rejected"
        EXPIRED = "expired", "Expired"
        VOID = "void", "Void (something changed after the request)"
        WITHDRAWN = "withdrawn", "Withdrawn by the requester"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        # True for both rollbacks (status_label says which): a replaced unit was restored,
        # a brand-new one removed again.
        ROLLED_BACK = "rolled_back", "Failed, rolled back"
        ROLLBACK_FAILED = "rollback_failed", "Failed, and the rollback failed too"
        CANCELLED = "cancelled", "Cancelled"
        INTERRUPTED = "interrupted", "Interrupted (the worker stopped)"

    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.DEPLOY)

    profile_version = models.ForeignKey(
        ProfileVersion, on_delete=models.PROTECT, related_name="deploy_requests"
    )
    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="deploy_requests")
    unit_name = models.CharField(max_length=247, validators=[validate_unit_name])
    # The exact text that will be pushed, rendered for the host's versions, and its hash:
    # an approval is valid only for this hash.
    unit_text = models.TextField()
    unit_sha256 = models.CharField(max_length=64)
    # What the host had when the request was made (read live), for the diff and to notice
    # that the host changed before execution.
    host_unit_text = models.TextField(blank=True)
    host_unit_sha256 = models.CharField(max_length=64, blank=True)
    # What systemd loaded under that name then, wherever it came from (a vendor unit in
    # /lib/systemd/system, drop-ins): paths, hashes, bounded texts (deploys.existing_units).
    host_loaded_unit = models.JSONField(default=dict, blank=True)
    lint_findings = models.JSONField(default=list, blank=True)
    warnings_acknowledged = models.BooleanField(default=False)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    status_reason = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="deploy_requests"
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True)
    approved_sha256 = models.CharField(max_length=64, blank=True)
    # What the job may do besides writing the unit (kill other users' GPU processes, roll
    # back, every wait, the benchmark gate), as made at request time, its hash, and the
    # hash the approval pinned (deploys.job_settings): part of what is approved.
    job_settings = models.JSONField(default=dict, blank=True)
    job_settings_sha256 = models.CharField(max_length=64, blank=True)
    approved_settings_sha256 = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A rollback request: the earlier push whose text goes back on the host.
    rollback_to = models.ForeignKey(
        "deploys.PushedUnit", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The job: cancel asked (it stops at the next step boundary), the last step that
    # completed, and the state it left the host in (read back at the end).
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    last_step = models.CharField(max_length=60, blank=True)
    host_state = models.TextField(blank=True)
    # A trial approved with "promote": the best candidate stays running as production when
    # it beats production by at least this many percent on every gated metric (None: never;
    # part of the trial's plan, which the approval pins: deploys.trials).
    trial_promote_pct = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-requested_at"]
        permissions = [
            ("approve_deployrequest", "Can approve or reject deploy requests"),
            ("cancel_deployrequest", "Can cancel queued or running deploy jobs"),
        ]
        indexes = [
            models.Index(fields=["status", "expires_at"]),
            # deploys.running: which versions a text on a host is, by its sha256
            models.Index(fields=["unit_sha256"]),
        ]

    @property
    def status_label(self) -> str:
        """The status in words, more exact than the choice label for a rollback: a deploy
        of a unit the host did not have has no previous unit to restore, its rollback
        removed the new one again."""
        if self.status != self.Status.ROLLED_BACK:
            return self.get_status_display()
        if self.kind == self.Kind.DEPLOY and not self.host_unit_sha256:
            return "Failed, new unit removed again"
        return "Failed, previous unit restored"

    def __str__(self) -> str:
        kind = "" if self.kind == self.Kind.DEPLOY else f"{self.get_kind_display().lower()} "
        return f"#{self.pk} {kind}{self.unit_name}.service → {self.host}"

    @property
    def finished(self) -> bool:
        return self.status in FINISHED_STATUSES

    @property
    def failed_loudly(self) -> bool:
        """The host may be down: a failed job whose rollback failed too."""
        return self.status == self.Status.ROLLBACK_FAILED


FINISHED_STATUSES = frozenset(
    {
        DeployRequest.Status.SUCCEEDED,
        DeployRequest.Status.FAILED,
        DeployRequest.Status.ROLLED_BACK,
        DeployRequest.Status.ROLLBACK_FAILED,
        DeployRequest.Status.CANCELLED,
        DeployRequest.Status.INTERRUPTED,
        DeployRequest.Status.VOID,
    }
)


class JobStep(models.Model):
    """One step of a deploy job (preflight, push, daemon-reload, …): its log, its result,
    every command it ran on the host (exit code, duration) and what it read there."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        SKIPPED = "skipped", "Skipped"

    class Phase(models.TextChoices):
        MAIN = "main", "Job"
        ROLLBACK = "rollback", "Rollback"

    request = models.ForeignKey(DeployRequest, on_delete=models.PROTECT, related_name="steps")
    name = models.CharField(max_length=50)
    phase = models.CharField(max_length=10, choices=Phase.choices, default=Phase.MAIN)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    log = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    # hostops.channel.records.records_json: every command, file access, D-Bus/NVML call.
    commands = models.JSONField(default=dict, blank=True)
    # What the step read on the host (unit properties, GPU tables, journal lines), by name.
    reads = models.JSONField(default=dict, blank=True)
    # While running: elapsed seconds and the latest message, for the live job page.
    progress = models.JSONField(default=dict, blank=True)
    # A trial's steps: which unit they acted on (0: production, i: candidate i; None:
    # the trial as a whole, or a job that is no trial).
    trial_position = models.PositiveSmallIntegerField(null=True, blank=True)

    @property
    def title(self) -> str:
        return step_title(self.name)

    @property
    def duration(self) -> float | None:
        if self.finished_at is None or self.started_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    class Meta:
        ordering = ["request", "started_at", "pk"]


class TrialCandidate(models.Model):
    """One candidate of a trial (a DeployRequest of kind TRIAL): the version tried in
    production's place, in its turn, as the exact unit text the approver saw (its sha256 is
    pinned by the approval with the order and the end action: `deploys.trials`), and how it
    went (its outcome, the verdict against production's baseline in words, its figures)."""

    class Outcome(models.TextChoices):
        PENDING = "", "Not tried yet"
        REJECTED = "rejected", "Rejected by the host's vLLM (not run)"
        FAILED = "failed", "Failed"
        FASTER = "faster", "Faster than production"
        PROMOTED = "promoted", "Faster; left running as production"
        SLOWER = "slower", "Slower than production"
        WITHIN = "within", "Within the threshold of production"
        NOISY = "noisy", "Not decided (noisy)"
        MEASURED = "measured", "Ran; not compared"
        CANCELLED = "cancelled", "Cancelled"

    request = models.ForeignKey(DeployRequest, on_delete=models.PROTECT, related_name="candidates")
    position = models.PositiveSmallIntegerField()
    profile_version = models.ForeignKey(
        ProfileVersion, on_delete=models.PROTECT, related_name="trial_candidates"
    )
    unit_name = models.CharField(max_length=247, validators=[validate_unit_name])
    unit_text = models.TextField()
    unit_sha256 = models.CharField(max_length=64)
    # What the host had under that name when the trial was requested ("" : nothing).
    host_unit_sha256 = models.CharField(max_length=64, blank=True)
    lint_findings = models.JSONField(default=list, blank=True)
    # Keep the candidate's unit file on the host at the end (it is stopped either way).
    keep = models.BooleanField(default=False)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, blank=True)
    outcome_reason = models.TextField(blank=True)
    # The benchmark's figures and the gate's words (bench_run, output_tok_s, summary, …).
    figures = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["request", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["request", "position"], name="unique_trial_candidate_position"
            )
        ]

    def __str__(self) -> str:
        return f"candidate {self.position} of #{self.request_id}: {self.unit_name}.service"

    @property
    def label(self) -> str:
        """ "vllm-kimi-ngram v2 as vllm-kimi-ngram.service" """
        return f"{self.profile_version} as {self.unit_name}.service"


class PushedUnit(models.Model):
    """Every unit text pushed to a host, and what it replaced (the backup, also kept on the
    host beside the unit)."""

    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="pushed_units")
    unit_name = models.CharField(max_length=247)
    request = models.ForeignKey(
        DeployRequest, null=True, blank=True, on_delete=models.PROTECT, related_name="pushes"
    )
    text = models.TextField()
    sha256 = models.CharField(max_length=64)
    previous_text = models.TextField(blank=True)
    previous_sha256 = models.CharField(max_length=64, blank=True)
    backup_path = models.CharField(max_length=500, blank=True)
    pushed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-pushed_at"]
        # deploys.running: the last push of each unit on a host; where a text was pushed
        indexes = [
            models.Index(fields=["host", "unit_name", "pushed_at"]),
            models.Index(fields=["sha256"]),
        ]


class UnitReading(models.Model):
    """What specadmin found in a unit file on a host when it last read it: its sha256
    ("" when there was no file), when, and which job step or probe read it. The pushes
    record what they wrote (`PushedUnit`); these rows are the reads (a job's end, a probe,
    a request page), so "what runs on H as U" is the newer of the two (`deploys.running`).
    """

    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="unit_readings")
    unit_name = models.CharField(max_length=247)
    sha256 = models.CharField(max_length=64, blank=True)
    read_at = models.DateTimeField()
    request = models.ForeignKey(
        DeployRequest, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    step = models.CharField(max_length=60)

    class Meta:
        ordering = ["-read_at", "-pk"]
        indexes = [
            models.Index(fields=["host", "unit_name", "read_at"]),
            models.Index(fields=["sha256"]),
        ]

    def __str__(self) -> str:
        return f"{self.unit_name}.service on {self.host_id}: {self.sha256[:12] or 'absent'}"


class UnitAdoption(models.Model):
    """An admin's decision that specadmin may overwrite a unit file it did not write: one
    exact file (host, unit name, sha256 of its content), so a file changed afterwards is
    not covered (`deploys.unit_policy`)."""

    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="unit_adoptions")
    unit_name = models.CharField(max_length=247, validators=[validate_unit_name])
    sha256 = models.CharField(max_length=64)
    adopted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    adopted_at = models.DateTimeField(auto_now_add=True)
    comment = models.TextField()

    class Meta:
        ordering = ["-adopted_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["host", "unit_name", "sha256"], name="unique_unit_adoption"
            )
        ]

    def __str__(self) -> str:
        return f"{self.unit_name}.service on {self.host} ({self.sha256[:12]}…)"


from deploys.locks import HostLock  # noqa: E402, F401  (models of deploys/locks.py)
