"""One table of a profile's fields: for each its kind, default, bounds, label, help,
section, widget and what it writes into the unit (docs/profile-schema.md).

Everything that is about one field alone is derived from `FIELDS`: the form's labels,
help and widgets (`units.forms`, `units.field_texts`), the shape of the canonical data
(`units.profile_data`), the range checks and the "extra arguments must not set a field's
flag" check (`units.validation`), the field ↔ unit-line map and the vLLM options of the
command line (`units.rendering`), the speculative-config keys (`units.speculative`) and
the import of hand-written units (`units.importing`). Rules across fields stay code,
each in one place (`units.validation`, `units.speculative`). The model's columns
(`units.models`) take their defaults and validator bounds from here.

Like Healthchecks' typed config classes, a field is a frozen dataclass, not a dict of
strings: a misspelt attribute fails at import time, not on a page.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from hostops.gpu_free import DEFAULT_THRESHOLD_MIB


class Kind(StrEnum):
    """The Python type a field holds in the canonical data (`units.profile_data`)."""

    TEXT = "text"  # str, "" when empty
    INT = "int"  # int or None
    BOOL = "bool"
    DECIMAL = "decimal"  # normalised decimal text ("0.92") or None
    NAMES = "names"  # list[str], one per line in the form
    ARGS = "args"  # list[str] of argv words
    WORDS = "words"  # list[str] of ExecStart= words in unit syntax, one per line
    ENV = "env"  # dict[str, str]
    SETTINGS = "settings"  # list of [section, "Key=value"], written as given
    LAYOUT = "layout"  # list[str]: the order of the command line (units.layout)


class Widget(StrEnum):
    """How the edit form shows a field."""

    TEXT = "text"
    NUMBER = "number"  # a text input with inputmode=numeric (validation judges it)
    LINES = "lines"  # a textarea, one item per line
    CHECKBOX = "checkbox"
    SELECT = "select"  # the known choices (validation judges them)
    DATALIST = "datalist"  # free text with the target version's choices suggested
    NONE = "none"  # not on the form: bookkeeping carried from the profile


class Target(StrEnum):
    """Where a field's value goes."""

    UNIT_NAME = "unit name"  # the file is NAME.service
    SETTING = "setting"  # a unit setting, `Key=`
    EXECUTABLE = "executable"  # the first word of ExecStart=
    POSITIONAL = "positional"  # a vLLM positional argument (the model)
    FLAG = "flag"  # a vLLM option of ExecStart=
    SPEC_KEY = "spec key"  # a key of the JSON of --speculative-config
    ENV_VAR = "env var"  # one Environment= variable
    ENVIRONMENT = "environment"  # Environment= lines, one per variable
    ARGV = "argv"  # more ExecStart= words
    VERBATIM_ARGV = "verbatim argv"  # more ExecStart= words in unit-file syntax
    VERBATIM_SETTINGS = "verbatim settings"  # more unit lines, as written
    LINT = "lint"  # only the linter reads it (target versions)
    DEPLOY_JOB = "deploy job"  # read by specadmin's deploy job, not written into the unit


@dataclass(frozen=True)
class Writes:
    """What a field writes: `target` and its name there (`--port`, `User`, `model` …).
    `line`: the unit line of `name` is shown at this field (lint findings there land on
    it); a line that several fields write is shown at one of them."""

    target: Target
    name: str = ""
    line: bool = True

    @property
    def key(self) -> str:
        """The text shown beside the field's label (`--port`, `User=`, `method`)."""
        if self.target == Target.SETTING:
            return f"{self.name}="
        return self.name or self.target.value


@dataclass(frozen=True)
class Bounds:
    """An integer range and the message that names it when a value is outside."""

    low: int
    high: int
    message: str


@dataclass(frozen=True)
class Field:
    name: str
    kind: Kind
    label: str
    section: str
    writes: Writes
    help: str = ""
    default: object = None
    bounds: Bounds | None = None
    required: bool = False  # an INT that may not be left empty
    widget: Widget = Widget.TEXT
    rows: int = 0  # for Widget.LINES
    # The field in a sentence ("… sets the max model length"); default: the label.
    noun: str = ""
    # What vLLM does when the option is not given, for the options a profile always
    # writes: an imported command line that did not give one leaves it out (units.layout).
    vllm_default: object = None

    @property
    def in_sentence(self) -> str:
        return self.noun or self.label.lower()

    @property
    def flag(self) -> str:
        """The vLLM option this field sets ("" when it sets none)."""
        return self.writes.name if self.writes.target == Target.FLAG else ""


MAX_TIMEOUT_SEC = 7 * 24 * 3600
# The longest model load the deploy job waits for (4 h): a job and its rollback must fit
# the worker's time limit, Q_TIMEOUT (deploys.jobs.checks).
MAX_READY_SEC = 4 * 3600

SECTION_TITLES: tuple[tuple[str, str], ...] = (
    ("service", "Service"),
    ("model", "Model"),
    ("gpus", "GPUs"),
    ("speculative", "Speculative decoding"),
    ("extra", "Extra arguments"),
    ("environment", "Environment"),
    ("systemd", "systemd"),
    ("deploy", "Deploy job"),
)

_T, _I, _B = Kind.TEXT, Kind.INT, Kind.BOOL
_DEPLOY = Writes(Target.DEPLOY_JOB)
_LINT = Writes(Target.LINT)
_PRE_NOT_SHOWN = Writes(Target.SETTING, "ExecStartPre", line=False)


def _flag(name: str) -> Writes:
    return Writes(Target.FLAG, name)


def _setting(name: str) -> Writes:
    return Writes(Target.SETTING, name)


def _spec(key: str) -> Writes:
    return Writes(Target.SPEC_KEY, key)


# In the order the edit page shows them, section by section.
_TABLE: tuple[Field, ...] = (
    # -- service
    Field(
        "name",
        _T,
        "Unit name",
        "service",
        Writes(Target.UNIT_NAME, "NAME.service"),
        "The unit is NAME.service (also the profile's name; fixed once saved). Letters, "
        "digits, “_”, “-”, “.”, “:”.",
    ),
    Field(
        "description",
        _T,
        "Description",
        "service",
        _setting("Description"),
        "Shown by systemctl status; empty: “vLLM <served name>”.",
    ),
    Field(
        "vllm_executable",
        _T,
        "vLLM executable",
        "service",
        Writes(Target.EXECUTABLE, "ExecStart="),
        "Absolute path of vllm (runs “vllm serve”), or of a venv's python "
        "(runs the OpenAI API server module).",
    ),
    Field(
        "host",
        _T,
        "Listen address",
        "service",
        _flag("--host"),
        "Address vLLM listens on. 0.0.0.0 is every interface: the API is then open to the network.",
        default="0.0.0.0",
        noun="host",
        vllm_default="0.0.0.0",
    ),
    Field(
        "port",
        _I,
        "Port",
        "service",
        _flag("--port"),
        "Port vLLM listens on (vLLM's default is 8000).",
        default=8000,
        bounds=Bounds(1, 65535, "The port must be between 1 and 65535."),
        required=True,
        vllm_default=8000,
        widget=Widget.NUMBER,
    ),
    Field(
        "target_vllm_version",
        _T,
        "Target vLLM version",
        "service",
        _LINT,
        "Flags and speculative methods are checked against this version "
        "(a host's probed version wins when deploying there).",
        default="0.16.0",
        widget=Widget.SELECT,
    ),
    Field(
        "target_systemd_version",
        _I,
        "Target systemd version",
        "service",
        _LINT,
        "Unit-file keys and Exec= parsing are checked for this version.",
        default=252,
        widget=Widget.SELECT,
    ),
    # -- model
    Field(
        "model",
        _T,
        "Model",
        "model",
        Writes(Target.POSITIONAL, "model"),
        "Local path or Hugging Face ID of the model vLLM loads.",
    ),
    Field(
        "served_model_names",
        Kind.NAMES,
        "Served model names",
        "model",
        _flag("--served-model-name"),
        "One per line; clients ask for these names. Empty: the model path.",
        default=list,
        widget=Widget.LINES,
        rows=2,
    ),
    Field(
        "max_model_len",
        _T,
        "Max model length",
        "model",
        _flag("--max-model-len"),
        "Context length in tokens, e.g. 32768, 32k or 128K; empty: the model's.",
    ),
    Field(
        "max_num_seqs",
        _I,
        "Max sequences",
        "model",
        _flag("--max-num-seqs"),
        "Requests processed at once (batch size); empty: vLLM's default.",
        bounds=Bounds(1, 1_000_000, "Max sequences must be at least 1 and at most 1000000."),
        widget=Widget.NUMBER,
    ),
    Field(
        "quantization",
        _T,
        "Quantization",
        "model",
        _flag("--quantization"),
        "Weight quantization method; empty: detected from the model.",
        widget=Widget.DATALIST,
    ),
    Field(
        "kv_cache_dtype",
        _T,
        "KV cache dtype",
        "model",
        _flag("--kv-cache-dtype"),
        "Data type of the KV cache, e.g. fp8 to fit longer contexts; empty: auto.",
        widget=Widget.DATALIST,
        noun="KV cache dtype",
    ),
    Field(
        "trust_remote_code",
        _B,
        "Trust remote code",
        "model",
        _flag("--trust-remote-code"),
        "Runs the model repository's own Python code. Only for models you trust.",
        default=False,
        widget=Widget.CHECKBOX,
    ),
    # -- GPUs
    Field(
        "gpu_devices",
        _T,
        "GPU devices",
        "gpus",
        Writes(Target.ENV_VAR, "CUDA_VISIBLE_DEVICES"),
        "CUDA_VISIBLE_DEVICES: indices (0,1,2) or GPU UUIDs; empty: all GPUs.",
    ),
    Field(
        "tensor_parallel_size",
        _I,
        "Tensor parallel size",
        "gpus",
        _flag("--tensor-parallel-size"),
        "GPUs one model copy is split across; usually the number of GPU devices below.",
        default=1,
        bounds=Bounds(1, 64, "The tensor parallel size must be 1 to 64."),
        required=True,
        vllm_default=1,
        widget=Widget.NUMBER,
    ),
    Field(
        "enable_expert_parallel",
        _B,
        "Expert parallel",
        "gpus",
        _flag("--enable-expert-parallel"),
        "Spreads the experts of a mixture-of-experts model over the "
        "GPUs instead of splitting every expert.",
        default=False,
        widget=Widget.CHECKBOX,
    ),
    Field(
        "gpu_memory_utilization",
        Kind.DECIMAL,
        "GPU memory utilization",
        "gpus",
        _flag("--gpu-memory-utilization"),
        "Fraction of each GPU's memory vLLM may use, e.g. 0.9.",
        noun="GPU memory utilization",
    ),
    Field(
        "gpu_free_wait",
        _B,
        "Wait for free GPUs before start",
        "gpus",
        _PRE_NOT_SHOWN,
        "Before starting, wait until every GPU is empty (memory and compute "
        "processes), so vLLM never starts beside a leftover process.",
        default=True,
        widget=Widget.CHECKBOX,
    ),
    Field(
        "gpu_free_wait_sec",
        _I,
        "GPU-free wait (s)",
        "gpus",
        _setting("ExecStartPre"),
        "Bounded wait; must fit inside the start timeout.",
        default=120,
        bounds=Bounds(
            1,
            MAX_TIMEOUT_SEC,
            f"The GPU-free wait must be at least 1 s and at most {MAX_TIMEOUT_SEC} s.",
        ),
        required=True,
        widget=Widget.NUMBER,
    ),
    Field(
        "gpu_free_threshold_mib",
        _I,
        "GPU-free threshold (MiB)",
        "gpus",
        _PRE_NOT_SHOWN,
        "A GPU counts as free at or below this much used memory.",
        default=DEFAULT_THRESHOLD_MIB,
        bounds=Bounds(0, 10_000_000, "The GPU-free threshold must be 0 to 10000000 MiB."),
        required=True,
        widget=Widget.NUMBER,
    ),
    # -- speculative decoding (which method takes which field: units/speculative.py)
    Field(
        "spec_method",
        _T,
        "Method",
        "speculative",
        _spec("method"),
        "Speculative decoding method, written into --speculative-config; the "
        "list offers what the target vLLM version accepts.",
        widget=Widget.SELECT,
        noun="speculative decoding",
    ),
    Field(
        "spec_draft_model",
        _T,
        "Draft model",
        "speculative",
        _spec("model"),
        "The smaller model that proposes the tokens: a path or Hugging Face ID.",
    ),
    Field(
        "spec_num_tokens",
        _I,
        "Speculative tokens",
        "speculative",
        _spec("num_speculative_tokens"),
        "Tokens proposed per step, at least 1.",
        widget=Widget.NUMBER,
        noun="number of speculative tokens",
    ),
    Field(
        "spec_prompt_lookup_min",
        _I,
        "Prompt lookup min",
        "speculative",
        _spec("prompt_lookup_min"),
        "n-gram: shortest prompt match to look up, at least 1.",
        widget=Widget.NUMBER,
    ),
    Field(
        "spec_prompt_lookup_max",
        _I,
        "Prompt lookup max",
        "speculative",
        _spec("prompt_lookup_max"),
        "n-gram: longest prompt match to look up, at least the min.",
        widget=Widget.NUMBER,
    ),
    Field(
        "spec_draft_tensor_parallel_size",
        _I,
        "Draft tensor parallel size",
        "speculative",
        _spec("draft_tensor_parallel_size"),
        "GPUs the draft model is split across.",
        widget=Widget.NUMBER,
    ),
    # -- extra arguments
    Field(
        "extra_args",
        Kind.ARGS,
        "Extra arguments",
        "extra",
        Writes(Target.ARGV, "vllm serve …"),
        "More vllm serve arguments, one option per line with its value after a "
        "space or “=” (--max-num-batched-tokens 8192). The value is taken as written, JSON "
        "included; a line without a leading “-” is one more value of the option above.",
        default=list,
        widget=Widget.LINES,
        rows=5,
    ),
    Field(
        "extra_args_verbatim",
        Kind.WORDS,
        "Command-line words, verbatim",
        "extra",
        Writes(Target.VERBATIM_ARGV, "ExecStart= words"),
        "Words written into ExecStart= exactly as here, in unit-file syntax, one per line: "
        "systemd still expands %-specifiers and $VARIABLES in them (an imported unit's "
        "words that name a variable, a specifier, or a flag written its own way).",
        default=list,
        widget=Widget.LINES,
        rows=2,
        noun="verbatim command-line words",
    ),
    Field(
        "command_layout",
        Kind.LAYOUT,
        "Command-line order",
        "extra",
        Writes(Target.ARGV, "ExecStart= order"),
        "The order of an imported unit's command line (docs/unit-import.md); empty: "
        "specadmin's own order.",
        default=list,
        widget=Widget.NONE,
    ),
    # -- environment
    Field(
        "environment",
        Kind.ENV,
        "Environment variables",
        "environment",
        Writes(Target.ENVIRONMENT, "Environment="),
        "One NAME=value per line. GPUs are set above, not here. Secrets go in "
        "the file below, not here.",
        default=dict,
        widget=Widget.LINES,
        rows=4,
    ),
    Field(
        "environment_file",
        _T,
        "Secrets file on the host",
        "environment",
        _setting("EnvironmentFile"),
        "EnvironmentFile=: an absolute path on the host to a root-only file "
        "of NAME=value lines, e.g. HF_TOKEN=… or VLLM_API_KEY=… (what --api-key reads). The "
        "service fails to start without it; specadmin never reads or shows it.",
    ),
    # -- systemd
    Field(
        "user",
        _T,
        "User",
        "systemd",
        _setting("User"),
        "Account vLLM runs as. Empty: root, which with 0.0.0.0 serves the network as root.",
    ),
    Field(
        "group",
        _T,
        "Group",
        "systemd",
        _setting("Group"),
        "Group vLLM runs as; empty: the user's group.",
    ),
    Field(
        "working_directory",
        _T,
        "Working directory",
        "systemd",
        _setting("WorkingDirectory"),
        "Directory vLLM starts in; empty: /.",
    ),
    Field(
        "restart",
        _T,
        "Restart",
        "systemd",
        _setting("Restart"),
        "When systemd restarts vLLM after it exits.",
        default="on-failure",
        widget=Widget.SELECT,
    ),
    Field(
        "restart_sec",
        _I,
        "Restart delay (s)",
        "systemd",
        _setting("RestartSec"),
        "Pause before a restart.",
        default=30,
        bounds=Bounds(0, 86400, "The restart delay must be 0 to 86400 seconds."),
        required=True,
        widget=Widget.NUMBER,
    ),
    Field(
        "timeout_start_sec",
        _I,
        "Start timeout (s)",
        "systemd",
        _setting("TimeoutStartSec"),
        "Longest start-up systemd waits for, the GPU-free wait included; "
        "large models load for many minutes.",
        default=3600,
        bounds=Bounds(
            1, MAX_TIMEOUT_SEC, f"The start timeout must be 1 to {MAX_TIMEOUT_SEC} seconds."
        ),
        required=True,
        widget=Widget.NUMBER,
    ),
    Field(
        "timeout_stop_sec",
        _I,
        "Stop timeout (s)",
        "systemd",
        _setting("TimeoutStopSec"),
        "How long a stop may take before systemd kills what is left.",
        default=120,
        bounds=Bounds(
            1, MAX_TIMEOUT_SEC, f"The stop timeout must be 1 to {MAX_TIMEOUT_SEC} seconds."
        ),
        required=True,
        widget=Widget.NUMBER,
    ),
    Field(
        "unit_extra",
        Kind.SETTINGS,
        "More unit settings, verbatim",
        "systemd",
        Writes(Target.VERBATIM_SETTINGS, "[Section] Key="),
        "Unit lines written as given, under a [Section] line each (e.g. [Service] then "
        "ExecStartPre=…, LimitNOFILE=65536): what an imported unit set that has no field "
        "here. ExecStart= is the profile's own.",
        default=list,
        widget=Widget.LINES,
        rows=3,
    ),
    # -- the deploy job's waits (deploys/jobs): bounded so that a whole job, with its
    # rollback, fits the worker's time limit (deploys.jobs.checks)
    Field(
        "deploy_gpu_clean_sec",
        _I,
        "GPU-clean wait (s)",
        "deploy",
        _DEPLOY,
        "After the stop, every GPU the service uses must be under the "
        "GPU-free threshold with no process left within this time, or nothing is started.",
        default=60,
        bounds=Bounds(1, 1800, "The GPU-clean wait must be 1 to 1800 seconds."),
        required=True,
        widget=Widget.NUMBER,
    ),
    Field(
        "deploy_kill_grace_sec",
        _I,
        "Kill grace period (s)",
        "deploy",
        _DEPLOY,
        "The service's leftover GPU processes get SIGTERM, then SIGKILL after this many seconds.",
        default=10,
        bounds=Bounds(0, 600, "The kill grace period must be 0 to 600 seconds."),
        required=True,
        widget=Widget.NUMBER,
    ),
    Field(
        "deploy_kill_foreign",
        _B,
        "Kill other users' GPU processes",
        "deploy",
        _DEPLOY,
        "Off: another user's process on the service's GPUs stops the "
        "deploy and is named. On: it is killed like a leftover.",
        default=False,
        widget=Widget.CHECKBOX,
    ),
    Field(
        "deploy_journal_check_sec",
        _I,
        "Journal check after start (s)",
        "deploy",
        _DEPLOY,
        "The journal is read this long after the start: a bad "
        "argument or config fails the deploy within seconds, not after the model load.",
        default=15,
        bounds=Bounds(1, 600, "The journal check must watch 1 to 600 seconds."),
        required=True,
        widget=Widget.NUMBER,
    ),
    Field(
        "deploy_ready_timeout_sec",
        _I,
        "Readiness wait (s)",
        "deploy",
        _DEPLOY,
        "How long /health and /v1/models may take to answer "
        "(model load); a crash is reported as soon as it happens.",
        default=2700,
        bounds=Bounds(
            10, MAX_READY_SEC, f"The readiness wait must be 10 to {MAX_READY_SEC} seconds."
        ),
        required=True,
        widget=Widget.NUMBER,
    ),
    Field(
        "deploy_rollback",
        _B,
        "Roll back on failure",
        "deploy",
        _DEPLOY,
        "A failed deploy puts the previous unit back and restarts it.",
        default=True,
        widget=Widget.CHECKBOX,
    ),
)

FIELDS: dict[str, Field] = {field.name: field for field in _TABLE}

# The vLLM options a profile writes after the model, in this order (units.rendering);
# --speculative-config, built from the spec_* fields, comes last.
OPTION_ORDER: tuple[str, ...] = (
    "served_model_names",
    "host",
    "port",
    "tensor_parallel_size",
    "enable_expert_parallel",
    "trust_remote_code",
    "max_model_len",
    "max_num_seqs",
    "gpu_memory_utilization",
    "quantization",
    "kv_cache_dtype",
)
SPEC_CONFIG_FLAG = "--speculative-config"


def _dest(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


# vLLM's argparse destination → the field that sets it (`model_tag`: the positional MODEL
# of `vllm serve`; --speculative-config is built from the spec_* fields).
DEST_FIELDS: dict[str, str] = {
    "model": "model",
    "model_tag": "model",
    **{_dest(FIELDS[name].flag): name for name in OPTION_ORDER},
    _dest(SPEC_CONFIG_FLAG): "spec_method",
}


def names_of(kind: Kind) -> frozenset[str]:
    """Every field of one kind."""
    return frozenset(f.name for f in _TABLE if f.kind == kind)


def fields_writing(target: Target) -> tuple[Field, ...]:
    return tuple(f for f in _TABLE if f.writes.target == target)


def sections() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(anchor, title, fields) of the edit page, in the table's order (fields not on the
    form left out)."""
    return tuple(
        (
            anchor,
            title,
            tuple(f.name for f in _TABLE if f.section == anchor and f.widget != Widget.NONE),
        )
        for anchor, title in SECTION_TITLES
    )


def default_of(name: str) -> object:
    """The model column's default (a callable for the list and dict fields)."""
    return FIELDS[name].default


def bounds_of(name: str) -> Bounds:
    bounds = FIELDS[name].bounds
    assert bounds is not None, name
    return bounds
