"""Profile validation: every field rejects what systemd or vLLM would reject, with a
message in the operator's terms, for the profile's target versions.

Two stages. First each field on its own and the cross-field rules (cheap, precise
messages). When those pass, the unit is rendered and linted with the real linter (the
same rules CI runs), and each blocking finding is mapped back to the field whose line
caused it — this is how extra arguments are checked against the target vLLM's flags
without a second, drifting copy of the VL rules.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError

from linting.cuda import INT_LIMIT, devices, read_visible_devices
from linting.execline.specifiers import specifier_table
from linting.systemd.catalog import available_versions as systemd_versions
from linting.vllm.catalog import (
    UnknownVllmVersion,
    VllmCatalog,
    available_versions,
    load_catalog,
)
from linting.vllm.invocation import accepts_tera_suffix, parse_human_int
from units.linting import ProfileLint, is_blocking, lint_profile
from units.models import PROFILE_FIELDS, RESTART_CHOICES, ServiceProfile
from units.names import validate_unit_name
from units.profile_data import (
    BOOL_FIELDS,
    INT_FIELDS,
    MAX_INT_DIGITS,
    STRING_FIELDS,
    bounded_decimal,
    is_ascii_digits,
    normalize_profile_data,
)
from units.rendering import (
    MAX_UNIT_BYTES,
    exec_start_groups,
    executable_specifier,
    is_python,
    render_unit,
)
from units.schema import DEST_FIELDS, FIELDS, Bounds, Kind
from units.speculative import validate_spec
from units.unicode_text import invisible_problem
from units.verbatim import check_layout, check_unit_extra, check_verbatim_words

Errors = dict[str, list[str]]

# Leave this much of TimeoutStartSec= for the nvidia-smi calls of the GPU-free wait: its
# sleeps add up to gpu_free_wait_sec, the queries come on top (docs/architecture.md fact 6).
GPU_WAIT_MARGIN_SEC = 30
DB_INT_MAX = 2**31 - 1
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# systemd's strict user/group names (valid_user_group_name(), src/basic/user-util.c),
# or a numeric ID.
_USER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,30}\Z")
_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)\Z")
_GPU_UUID = re.compile(r"GPU-[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\Z")
_MIG_UUID = re.compile(r"MIG-[0-9A-Za-z][0-9A-Za-z/-]*\Z")
_MAX_LENGTHS = {
    f.name: f.max_length
    for f in ServiceProfile._meta.local_fields
    if getattr(f, "max_length", None) and f.name in PROFILE_FIELDS
}
# vLLM destinations a profile field sets: extra arguments must not set them a second time
# (argparse keeps the last value, so the field would silently lose). `model_tag` is the
# positional MODEL of `vllm serve`; --speculative-config is written from the spec_* fields.
OWNED_DESTS: dict[str, str] = {dest: FIELDS[name].in_sentence for dest, name in DEST_FIELDS.items()}
# Integer ranges, and the integers that may not be left empty (units.schema).
_RANGES: dict[str, Bounds] = {name: f.bounds for name, f in FIELDS.items() if f.bounds}
_REQUIRED: frozenset[str] = frozenset(name for name, f in FIELDS.items() if f.required)
_LIST_FIELDS: tuple[str, ...] = tuple(
    name for name, f in FIELDS.items() if f.kind in (Kind.NAMES, Kind.ARGS, Kind.WORDS)
)


def _control(text: str, allowed: str = "") -> str | None:
    """The first control character of `text` (as the user would name it), or None."""
    for c in text:
        if (ord(c) < 0x20 or c == "\x7f") and c not in allowed:
            return {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", "\x00": "NUL"}.get(
                c, f"the control character U+{ord(c):04X}"
            )
    return None


class _Checker:
    def __init__(self, data: dict[str, Any]):
        self.data = data
        self.errors: Errors = {}

    def add(self, field: str, message: str) -> None:
        self.errors.setdefault(field, []).append(message)

    def catalog(self) -> VllmCatalog | None:
        version = self.data.get("target_vllm_version") or ""
        if not isinstance(version, str) or not self.ok("target_vllm_version"):
            return None  # the type check said why (a JSON caller can send a list)
        try:
            return load_catalog(version)
        except UnknownVllmVersion:
            return None

    # -- types -------------------------------------------------------------------------

    def types(self) -> None:
        """Each field holds the Python type its form field produces; nothing unknown."""
        self.unknown_settings()
        self.string_types()
        self.int_types()
        self.bool_types()
        self.list_types()
        self.environment_type()
        self.hidden_characters()

    def unknown_settings(self) -> None:
        for key in self.data:
            if key not in PROFILE_FIELDS:
                self.add("__all__", f"Unknown setting “{key}”.")

    def string_types(self) -> None:
        for key in STRING_FIELDS:
            value = self.data[key]
            if not isinstance(value, str):
                self.add(key, "Enter text.")
            elif key in _MAX_LENGTHS and len(value) > _MAX_LENGTHS[key]:
                self.add(key, f"At most {_MAX_LENGTHS[key]} characters.")

    def int_types(self) -> None:
        for key in INT_FIELDS:
            value = self.data[key]
            if isinstance(value, str) and is_ascii_digits(value.strip()):
                self.add(key, f"Enter a whole number (at most {MAX_INT_DIGITS} digits).")
            elif value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                self.add(key, "Enter a whole number.")

    def bool_types(self) -> None:
        for key in BOOL_FIELDS:
            if not isinstance(self.data[key], bool):
                self.add(key, "Choose yes or no.")

    def list_types(self) -> None:
        for key in _LIST_FIELDS:
            value = self.data[key]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                self.add(key, "Give a list of texts.")

    def environment_type(self) -> None:
        env = self.data["environment"]
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            self.add("environment", "Give variables as NAME → value texts.")

    def hidden_characters(self) -> None:
        """Line/paragraph separators, bidi and zero-width characters, C1 controls: systemd
        reads them as ordinary bytes, pages show something else (`units.unicode_text`).
        ASCII controls are named by each field's own check."""
        d = self.data
        texts: list[tuple[str, str]] = [(k, d[k]) for k in sorted(STRING_FIELDS)]
        for key in _LIST_FIELDS:
            if isinstance(d[key], list):
                texts.extend((key, v) for v in d[key])
        if isinstance(d["environment"], dict):
            for name, value in d["environment"].items():
                texts.extend([("environment", name), ("environment", value)])
        for key, text in texts:
            if not self.ok(key) or not isinstance(text, str):
                continue
            problem = invisible_problem(text, ascii_controls=False)
            if problem:
                self.add(key, problem)

    def ok(self, *fields: str) -> bool:
        return not any(f in self.errors for f in fields)

    # -- fields ------------------------------------------------------------------------

    def name(self) -> None:
        if not self.ok("name"):
            return
        try:
            validate_unit_name(self.data["name"])
        except ValidationError as exc:
            for message in exc.messages:
                self.add("name", message)

    def description(self) -> None:
        text = self.data["description"]
        if not self.ok("description"):
            return
        bad = _control(text)
        if bad:
            self.add("description", f"The description cannot contain {bad}.")
        elif text.endswith("\\"):
            self.add(
                "description",
                "The description cannot end with “\\”: systemd would join the next line to it.",
            )

    def executable(self) -> None:
        exe = self.data["vllm_executable"]
        if not self.ok("vllm_executable"):
            return
        field = "vllm_executable"
        if not exe:
            self.add(field, "Give the path to `vllm` or to a venv's python.")
            return
        bad = _control(exe)
        lead = executable_specifier(exe)
        if bad:
            self.add(field, f"The path cannot contain {bad}.")
        elif lead:
            self._specifier_executable(exe, lead)
        elif not exe.startswith("/"):
            self.add(field, "Give an absolute path (systemd runs it without a shell).")
        elif any(c in exe for c in "'\"\\$"):
            self.add(field, "The path cannot contain quotes, “\\” or “$”.")
        elif posixpath.normpath(exe) != exe or exe.startswith("//"):
            self.add(
                field,
                f"Write the path plainly as {posixpath.normpath(exe)!r} "
                "(no “//”, “/./”, “/../” or trailing “/”).",
            )
        elif not (posixpath.basename(exe) == "vllm" or is_python(exe)):
            self.add(
                field,
                "The executable must be `vllm` (e.g. /opt/vllm/bin/vllm) or a venv's python "
                "(e.g. /opt/vllm/bin/python3), which runs vLLM's API server module.",
            )

    def _specifier_executable(self, exe: str, lead: str) -> None:
        """`%h/vllm/bin/vllm`: the specifier as systemd expands it, the rest plainly."""
        field, rest = "vllm_executable", exe[len(lead) :]
        known, _ = specifier_table(int(self.data["target_systemd_version"] or 0))
        path = "/dir" + rest
        if lead[1] not in known:
            self.add(field, f"systemd {self.data['target_systemd_version']} does not know {lead}.")
        elif "%" in rest or any(c in rest for c in "'\"\\$ "):
            self.add(
                field,
                f"Only a leading directory specifier ({lead}) is written as one: the rest of "
                "the path cannot contain “%”, quotes, “\\”, “$” or spaces.",
            )
        elif posixpath.normpath(path) != path:
            self.add(field, "Write the path plainly (no “//”, “/./”, “/../” or trailing “/”).")
        elif not (posixpath.basename(exe) == "vllm" or is_python(exe)):
            self.add(field, "The executable must be `vllm` or a venv's python.")

    def model(self) -> None:
        model = self.data["model"]
        if not self.ok("model"):
            return
        if not model:
            self.add("model", "Give the model path or Hugging Face ID.")
            return
        bad = _control(model)
        if bad:
            self.add("model", f"The model cannot contain {bad}.")
        elif model.startswith("-"):
            self.add("model", "The model cannot start with “-”: vLLM would read it as an option.")

    def served_names(self) -> None:
        if not self.ok("served_model_names"):
            return
        seen: set[str] = set()
        for name in self.data["served_model_names"]:
            bad = _control(name)
            if not name:
                self.add("served_model_names", "A served model name cannot be empty.")
            elif bad:
                self.add("served_model_names", f"“{name}” cannot contain {bad}.")
            elif name.startswith("-"):
                self.add(
                    "served_model_names",
                    f"“{name}” cannot start with “-”: vLLM would read it as an option.",
                )
            elif name in seen:
                self.add("served_model_names", f"“{name}” is listed twice.")
            seen.add(name)

    def host(self) -> None:
        host = self.data["host"]
        if not self.ok("host"):
            return
        if not host:
            self.add("host", "Give the address to listen on (0.0.0.0 for all interfaces).")
            return
        try:
            ipaddress.ip_address(host)
            return
        except ValueError:
            pass
        if host.startswith("[") and host.endswith("]"):
            self.add("host", f"Write the IPv6 address without brackets: {host[1:-1]}.")
            return
        labels = host.rstrip(".").split(".")
        if (
            len(host) > 253
            or not all(_HOST_LABEL.match(label) for label in labels)
            or labels[-1].isdigit()
        ):
            self.add("host", f"“{host}” is neither an IP address nor a host name.")

    def numbers(self) -> None:
        d = self.data
        for key, bounds in _RANGES.items():
            if not self.ok(key):
                continue
            value = d[key]
            if value is None:
                if key in _REQUIRED:
                    self.add(key, "This field is required.")
                continue
            if not bounds.low <= value <= bounds.high:
                self.add(key, bounds.message)
        # The speculative numbers have no range of their own, but the model's integer
        # columns end at DB_INT_MAX (PostgreSQL `integer`): saving more would fail there.
        # (The systemd version is checked against its list of versions.)
        for key in sorted(INT_FIELDS - _RANGES.keys() - {"target_systemd_version"}):
            value = d[key]
            if self.ok(key) and value is not None and value > DB_INT_MAX:
                self.add(key, f"Enter a number up to {DB_INT_MAX}.")

    def gpu_devices(self) -> None:
        text = self.data["gpu_devices"]
        if not self.ok("gpu_devices") or not text:
            return
        items = text.split(",")
        seen: set[int | str] = set()
        for item in items:
            if not item:
                self.add("gpu_devices", "Remove the empty entry between commas.")
                return
            if not (is_ascii_digits(item) or _GPU_UUID.match(item) or _MIG_UUID.match(item)):
                self.add(
                    "gpu_devices",
                    f"“{item}” is not a GPU index (0, 1, …) or a GPU UUID (GPU-xxxxxxxx-…, "
                    "MIG-…): CUDA stops reading the list there and hides the rest.",
                )
                return
            if is_ascii_digits(item) and (len(item.lstrip("0")) > 10 or int(item) >= INT_LIMIT):
                self.add(
                    "gpu_devices",
                    f"GPU {item} is beyond 32 bits: CUDA keeps only those (4294967296 is GPU 0).",
                )
                return
            named = devices(read_visible_devices(item))  # as CUDA reads it: 01 is GPU 1
            key = named[0] if named else item.lower()  # a MIG device: as written
            if key in seen:
                why = ": CUDA then makes no GPU visible" if isinstance(key, int) else ""
                self.add("gpu_devices", f"GPU {item} is listed twice{why}.")
                return
            seen.add(key)
        tp = self.data["tensor_parallel_size"]
        if self.ok("tensor_parallel_size") and isinstance(tp, int) and tp > len(items):
            self.add(
                "tensor_parallel_size",
                f"Tensor parallel size {tp} needs {tp} GPUs, but the GPU list makes "
                f"{len(items)} visible: vLLM refuses to start.",
            )

    def gpu_memory(self) -> None:
        value = self.data["gpu_memory_utilization"]
        if not self.ok("gpu_memory_utilization") or value is None:
            return
        number = bounded_decimal(value)
        if number is None:
            self.add("gpu_memory_utilization", "Enter a fraction such as 0.9.")
        elif not Decimal(0) < number <= Decimal(1):
            self.add(
                "gpu_memory_utilization",
                "GPU memory utilization is a fraction of each GPU's memory: above 0, at most 1.",
            )
        elif number.as_tuple().exponent < -3:  # type: ignore[operator]
            self.add("gpu_memory_utilization", "At most three decimals (e.g. 0.925).")

    def max_model_len(self) -> None:
        text = self.data["max_model_len"]
        # Read with the target version's rules: none to read it by when that is unknown.
        if not self.ok("max_model_len", "target_vllm_version") or not text:
            return
        version = self.data["target_vllm_version"]
        try:
            tokens = parse_human_int(text, version)
        except ValueError as exc:
            tera = ", 1t / 1T" if accepts_tera_suffix(version) else ""
            detail = f"vLLM {version} refuses it: {exc}" if "Decimals" in str(exc) else ""
            self.add(
                "max_model_len",
                detail
                or f"vLLM {version} cannot read “{text}” as a length: use a number of tokens "
                f"such as 32768, 32k (32000) or 32K (32768){tera}.",
            )
            return
        if tokens < 1:
            self.add("max_model_len", "The max model length must be at least 1 token.")

    def choices(self) -> None:
        catalog = self.catalog()
        if catalog is None:
            return
        version = catalog.version
        for field, label in (
            ("quantization", "quantization method"),
            ("kv_cache_dtype", "KV cache dtype"),
        ):
            value = self.data[field]
            if not self.ok(field) or not value:
                continue
            choices = field_choices(field, version)
            if choices and value not in choices:
                self.add(
                    field,
                    f"vLLM {version} has no {label} “{value}”; choose one of: "
                    f"{', '.join(choices)}.",
                )

    def extra_args(self) -> None:
        if not self.ok("extra_args"):
            return
        catalog = self.catalog()
        for word in self.data["extra_args"]:
            bad = _control(word, allowed="\t")
            if word == "":
                self.add("extra_args", "An extra argument cannot be empty.")
            elif bad:
                self.add("extra_args", f"“{word!r}” cannot contain {bad}; one argument per line.")
            elif catalog is not None and word.startswith("-"):
                match = catalog.resolve_flag(word)
                if match is not None and match.spec.dest in OWNED_DESTS:
                    label = OWNED_DESTS[match.spec.dest]
                    self.add(
                        "extra_args",
                        f"“{word}” sets the {label}, which has its own field: set it there "
                        "(given twice, vLLM silently keeps only the last one).",
                    )

    def environment(self) -> None:
        if not self.ok("environment"):
            return
        for name, value in self.data["environment"].items():
            if not _ENV_NAME.match(name):
                self.add(
                    "environment",
                    f"“{name}” is not a valid variable name (letters, digits and “_”, not "
                    "starting with a digit).",
                )
            elif name == "CUDA_VISIBLE_DEVICES":
                self.add("environment", "Set CUDA_VISIBLE_DEVICES with the GPU devices field.")
            else:
                bad = _control(value, allowed="\t")
                if bad:
                    self.add("environment", f"The value of {name} cannot contain {bad}.")

    def user_group(self) -> None:
        for field in ("user", "group"):
            value = self.data[field]
            if not self.ok(field) or not value:
                continue
            if is_ascii_digits(value):
                # uid_is_valid()/gid_is_valid() (src/basic/user-util.h) refuse (uid_t) -1
                # and the 16-bit -1, 65535.
                if int(value) >= 2**32 - 1 or int(value) == 65535:
                    self.add(field, f"{value} is not a valid numeric ID.")
            elif not _USER_NAME.match(value):
                self.add(
                    field,
                    f"“{value}” is not a valid {field} name: letters, digits, “_” and “-”, "
                    "starting with a letter or “_”, at most 31 characters.",
                )

    def working_directory(self) -> None:
        path = self.data["working_directory"]
        if not self.ok("working_directory") or not path:
            return
        bad = _control(path)
        if bad:
            self.add("working_directory", f"The directory cannot contain {bad}.")
        elif not path.startswith("/"):
            self.add("working_directory", "Give an absolute path (starting with “/”).")
        elif any(c in path for c in "'\"\\"):
            self.add("working_directory", "The directory cannot contain quotes or “\\”.")
        elif posixpath.normpath(path) != path or path.startswith("//"):
            self.add(
                "working_directory",
                f"Write the path plainly as {posixpath.normpath(path)!r}.",
            )

    def environment_file(self) -> None:
        path = self.data["environment_file"]
        if not self.ok("environment_file") or not path:
            return
        bad = _control(path)
        if bad:
            self.add("environment_file", f"The path cannot contain {bad}.")
        elif not path.startswith("/"):
            self.add("environment_file", "Give an absolute path on the host (starting with “/”).")
        elif any(c in path for c in "'\"\\ "):
            self.add("environment_file", "The path cannot contain quotes, “\\” or spaces.")
        elif posixpath.normpath(path) != path or path.startswith("//"):
            self.add("environment_file", f"Write the path plainly as {posixpath.normpath(path)!r}.")

    def restart(self) -> None:
        value = self.data["restart"]
        allowed = [c for c, _ in RESTART_CHOICES]
        if self.ok("restart") and value not in allowed:
            self.add("restart", f"Choose one of: {', '.join(allowed)}.")

    def versions(self) -> None:
        d = self.data
        if self.ok("target_vllm_version") and d["target_vllm_version"] not in available_versions():
            self.add(
                "target_vllm_version",
                f"No catalog for vLLM “{d['target_vllm_version']}”; choose one of: "
                f"{', '.join(available_versions())}.",
            )
        if self.ok("target_systemd_version") and (
            d["target_systemd_version"] not in systemd_versions()
        ):
            self.add(
                "target_systemd_version",
                "Choose one of the systemd versions: "
                + ", ".join(str(v) for v in systemd_versions())
                + ".",
            )

    def gpu_wait(self) -> None:
        d = self.data
        if not (d["gpu_free_wait"] is True and self.ok("gpu_free_wait_sec", "timeout_start_sec")):
            return
        wait, timeout = d["gpu_free_wait_sec"], d["timeout_start_sec"]
        if wait is None or timeout is None:
            return
        if wait + GPU_WAIT_MARGIN_SEC > timeout:
            self.add(
                "gpu_free_wait_sec",
                f"The GPU-free wait ({wait} s) must fit inside the start timeout ({timeout} s) "
                f"with {GPU_WAIT_MARGIN_SEC} s to spare: systemd kills a start-pre command "
                "at TimeoutStartSec= and the start fails. Shorten the wait or raise the "
                "start timeout.",
            )

    def speculative(self) -> None:
        spec_fields = (
            "spec_method",
            "spec_num_tokens",
            "spec_prompt_lookup_min",
            "spec_prompt_lookup_max",
            "spec_draft_model",
            "spec_draft_tensor_parallel_size",
            "target_vllm_version",
        )
        if self.ok(*spec_fields):
            validate_spec(self.data, self.errors)

    def verbatim_parts(self) -> None:
        """The imported unit's words, order and lines (units.verbatim)."""
        d = self.data
        if self.ok("extra_args_verbatim"):
            check_verbatim_words(d["extra_args_verbatim"], self.add)
        if self.ok("command_layout"):
            if isinstance(d["command_layout"], list):
                check_layout(d["command_layout"], self.add)
            else:
                self.add("extra_args_verbatim", "Give the command-line order as a list.")
        check_unit_extra(d["unit_extra"], self.add)
        self.verbatim_owned_flags()

    def verbatim_owned_flags(self) -> None:
        """A verbatim word may set what a field sets only while that field writes
        nothing (an import leaves a field unwritten then); both written, vLLM would keep
        the last one silently."""
        catalog = self.catalog()
        if catalog is None or not self.ok(*PROFILE_FIELDS) or not self.data["extra_args_verbatim"]:
            return
        written = {group.field for group in exec_start_groups(self.data)}
        for word in self.data["extra_args_verbatim"]:
            match = catalog.resolve_flag(word) if word.startswith("-") else None
            owner = DEST_FIELDS.get(match.spec.dest) if match else None
            if owner is not None and owner in written:
                self.add(
                    "extra_args_verbatim",
                    f"“{word}” sets the {OWNED_DESTS[match.spec.dest]}, which its field "  # type: ignore[union-attr]
                    "writes too: given twice, vLLM silently keeps only the last one.",
                )

    def run(self) -> Errors:
        self.types()
        for check in (
            self.name,
            self.description,
            self.executable,
            self.model,
            self.served_names,
            self.host,
            self.numbers,
            self.versions,
            self.gpu_devices,
            self.gpu_memory,
            self.max_model_len,
            self.choices,
            self.speculative,
            self.extra_args,
            self.environment,
            self.user_group,
            self.working_directory,
            self.environment_file,
            self.restart,
            self.gpu_wait,
            self.verbatim_parts,
        ):
            check()
        return self.errors


def field_choices(field: str, vllm_version: str) -> list[str]:
    """Choices of `quantization` / `kv_cache_dtype` in a vLLM version: the runtime list when
    the catalog has one (0.11+ validate quantization after argparse), else argparse's."""
    try:
        catalog = load_catalog(vllm_version)
    except UnknownVllmVersion:
        return []
    if field in catalog.runtime_choices:
        return list(catalog.runtime_choices[field])
    flag = catalog.flag("--" + field.replace("_", "-"))
    return [str(c) for c in flag.choices] if flag and flag.choices else []


def field_errors(data: dict[str, Any]) -> Errors:
    """The first stage only (each field, cross-field rules) on normalised data: what the
    live preview shows beside the findings of its own, single lint."""
    return _Checker(data).run()


def lint_errors(lint: ProfileLint) -> Errors:
    """The second stage: each blocking finding at the field that produced its line."""
    errors: Errors = {}
    for finding in lint.report.findings:
        if is_blocking(finding):
            message = f"{lint.describe(finding)} ({finding.code})"
            errors.setdefault(lint.field_of(finding), []).append(message)
    return errors


def validate_profile_data(data: dict[str, Any]) -> Errors:
    """field → messages ("__all__" for what no single field causes); empty when valid.
    The unit is rendered and linted (ShellCheck on) only when every field passes."""
    normalized = normalize_profile_data(data)
    return (
        field_errors(normalized) or size_errors(normalized) or lint_errors(lint_profile(normalized))
    )


def size_errors(data: dict[str, Any]) -> Errors:
    """The rendered unit over what a deploy can push (checked before linting it)."""
    size = len(render_unit(data).encode("utf-8"))
    if size <= MAX_UNIT_BYTES:
        return {}
    return {
        "__all__": [
            f"The unit would be {size} bytes; the limit is {MAX_UNIT_BYTES} bytes (256 KiB), "
            "the most a deploy pushes. Shorten the environment or the extra arguments."
        ]
    }


def clean_profile_data(data: dict[str, Any]) -> dict[str, Any]:
    """Canonical, valid data, or ValidationError with the messages per field."""
    normalized = normalize_profile_data(data)
    errors = validate_profile_data(normalized)
    if errors:
        raise ValidationError(errors)
    return normalized
