"""Profile data → the vLLM argv and the systemd unit text.

`profile_argv()` is the single description of what the program receives; the template
(`templates/units/vllm.service`) writes those same words through the `unitfile` filters,
so the linter's `--show-argv` of the rendered unit gives back exactly `profile_argv()`
(the property test checks this round trip). Rendering is deterministic: same data, same
bytes, same sha256 in the version history.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from django.template.loader import get_template

from hostops.gpu_free import BASH_MEMORY_FREE, wait_gpus
from units.layout import Token, parse_token
from units.profile_data import normalize_profile_data
from units.schema import FIELDS, OPTION_ORDER, SPEC_CONFIG_FLAG, Kind, Target, fields_writing
from units.speculative import spec_config
from units.templatetags.unitfile import exec_words, spec_json
from units.unicode_text import split_lines

TEMPLATE_NAME = "units/vllm.service"
# What a deploy can push (hostops.channel.push.MAX_UNIT_BYTES, the same number): a
# profile whose unit is larger is refused when it is saved, not first at deploy time.
MAX_UNIT_BYTES = 256 * 1024
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?\Z")  # as linting/vllm/detect.py recognises it
_NEGATIVE_NUMBER = re.compile(r"-\d+\Z|-\d*\.\d+\Z")
# The GPU-free wait polls this often; its worst case is iterations × interval.
GPU_WAIT_INTERVAL_SEC = 5


@dataclass(frozen=True)
class ArgGroup:
    """Words of ExecStart= that belong to one profile field; the template writes each
    group on its own continuation line, which lets lint findings map back to the field."""

    field: str
    words: tuple[str, ...]
    verbatim: bool = False  # words in unit-file syntax, written as they are

    @property
    def text(self) -> str:
        """The group as ExecStart= text."""
        return " ".join(self.words) if self.verbatim else exec_words(self.words)


def is_python(executable: str) -> bool:
    """A venv's python runs the OpenAI API server module instead of `vllm serve`."""
    return bool(_PYTHON.match(posixpath.basename(executable)))


def exec_start_groups(data: dict[str, Any]) -> list[ArgGroup]:
    """The vLLM command line, grouped by the field each part comes from: in specadmin's
    order, or in an imported unit's (`command_layout`, units.layout)."""
    if data.get("command_layout"):
        return _layout_groups(data)
    return [
        *_program_groups(data),
        *_option_groups(data),
        *_extra_arg_groups(data["extra_args"]),
        *_verbatim_groups(data.get("extra_args_verbatim") or []),
    ]


def _program_groups(data: dict[str, Any]) -> list[ArgGroup]:
    """The executable and the model: `vllm serve MODEL`, or a python running the API
    server module with `--model MODEL`."""
    exe = data["vllm_executable"]
    if is_python(exe):
        return [
            ArgGroup("vllm_executable", (exe, "-m", API_SERVER_MODULE)),
            ArgGroup("model", ("--model", data["model"])),
        ]
    return [ArgGroup("vllm_executable", (exe, "serve")), ArgGroup("model", (data["model"],))]


def _verbatim_groups(words: list[str]) -> list[ArgGroup]:
    return [ArgGroup("extra_args_verbatim", tuple(words), verbatim=True)] if words else []


class _Words:
    """The words of a list field handed out in order (`extra:N`, `verbatim:N`)."""

    def __init__(self, words: list[str]) -> None:
        self.words, self.next = list(words), 0

    def take(self, count: int) -> tuple[str, ...]:
        taken = tuple(self.words[self.next : self.next + count])
        self.next += len(taken)
        return taken

    def rest(self) -> list[str]:
        return self.take(len(self.words))


def _layout_groups(data: dict[str, Any]) -> list[ArgGroup]:
    """The command line in the layout's order; what the layout does not place follows:
    fields set since (an option a profile always writes only when it differs from what
    vLLM does without it), then extra and verbatim words not placed."""
    program, model = _program_groups(data)
    extras = _Words(data["extra_args"])
    verbatim = _Words(data.get("extra_args_verbatim") or [])
    groups, placed = [program], set()
    for token in filter(None, map(parse_token, data["command_layout"])):
        group = _token_group(token, data, model, extras, verbatim)
        if group is not None:
            groups.append(group)
            placed.add(group.field)
    if "model" not in placed:
        groups.insert(1, model)
    for name in OPTION_ORDER:
        vllm_default = FIELDS[name].vllm_default
        if name not in placed and (vllm_default is None or data[name] != vllm_default):
            groups.extend(filter(None, [_option_group(name, data[name])]))
    if "spec_method" not in placed:
        groups.extend(_spec_groups(data))
    return [*groups, *_extra_arg_groups(extras.rest()), *_verbatim_groups(verbatim.rest())]


def _token_group(
    token: Token, data: dict[str, Any], model: ArgGroup, extras: _Words, verbatim: _Words
) -> ArgGroup | None:
    if token.field == "extra":
        words = extras.take(token.count)
        return ArgGroup("extra_args", words) if words else None
    if token.field == "verbatim":
        words = verbatim.take(token.count)
        return ArgGroup("extra_args_verbatim", words, verbatim=True) if words else None
    if token.field == "model":
        group = model if not token.spelling else ArgGroup("model", (token.spelling, data["model"]))
        return _spelled(ArgGroup("model", group.words, verbatim=token.verbatim), token)
    if token.field == "spec_method":
        groups = _spec_groups(data)
        return _spelled(groups[0], token) if groups else None
    if token.field in OPTION_ORDER:
        group = _option_group(token.field, data[token.field])
        return _spelled(group, token) if group is not None else None
    return None


def _spelled(group: ArgGroup, token: Token) -> ArgGroup:
    """`group` under the token's spelling of its option, or joined to its value."""
    words = group.words
    if token.spelling and len(words) >= 2 and words[0].startswith("-"):
        words = (token.spelling, *words[1:])
    if token.joined and len(words) == 2:
        words = (f"{words[0]}={words[1]}",)
    return ArgGroup(group.field, words, group.verbatim)


def _option_group(name: str, value: Any) -> ArgGroup | None:
    """The words field `name` writes for `value` (units.schema: its flag and kind); None
    when it writes nothing. Options a profile always writes (host, port, tensor parallel
    size) are required fields and so never empty."""
    field = FIELDS[name]
    if field.kind == Kind.BOOL:
        words: tuple[Any, ...] = (field.flag,) if value else ()
    elif field.kind == Kind.NAMES:
        words = (field.flag, *value) if value else ()
    else:
        words = () if value is None or value == "" else (field.flag, value)
    return ArgGroup(name, tuple(str(w) for w in words)) if words else None


def _option_groups(data: dict[str, Any]) -> list[ArgGroup]:
    """One group per vLLM option a profile field sets, in a fixed order
    (units.schema.OPTION_ORDER), then the speculative config."""
    groups = [g for name in OPTION_ORDER if (g := _option_group(name, data[name])) is not None]
    return groups + _spec_groups(data)


def _spec_groups(data: dict[str, Any]) -> list[ArgGroup]:
    config = spec_config(data)
    if config is None:
        return []
    return [ArgGroup("spec_method", (SPEC_CONFIG_FLAG, spec_json(config)))]


def _extra_arg_groups(extra_args: list[str]) -> list[ArgGroup]:
    """Extra arguments: an option starts a new line, its values (a negative number is a
    value to argparse) follow it."""
    groups: list[ArgGroup] = []
    current: list[str] = []
    for word in extra_args:
        if word.startswith("-") and not _NEGATIVE_NUMBER.match(word) and current:
            groups.append(ArgGroup("extra_args", tuple(current)))
            current = []
        current.append(word)
    if current:
        groups.append(ArgGroup("extra_args", tuple(current)))
    return groups


def profile_argv(data: dict[str, Any]) -> list[str]:
    """The exact argv the vLLM process receives for this profile."""
    data = normalize_profile_data(data)
    return [word for group in exec_start_groups(data) for word in group.words]


def gpu_wait_iterations(wait_sec: int) -> tuple[int, int]:
    """(iterations, seconds per sleep) so that iterations × sleep ≤ wait_sec."""
    interval = GPU_WAIT_INTERVAL_SEC if wait_sec >= 2 * GPU_WAIT_INTERVAL_SEC else 1
    return max(1, wait_sec // interval), interval


def gpu_wait_script(data: dict[str, Any]) -> str | None:
    """The bash script of the optional GPU-free wait (ExecStartPre=), or None.

    What the seed's loop got wrong, fixed: it is bounded (`seq` iterations × `sleep`
    ≤ gpu_free_wait_sec, which validation keeps inside TimeoutStartSec=, fact 6); it looks
    at the unit's own GPUs, all of them (`nvidia-smi -i` with every GPU of the profile's
    list as CUDA reads it; no `-i`, every GPU, without a list or where `-i` cannot name
    them: `hostops.gpu_free.wait_gpus`), so services on other GPUs do not hold it back; it
    requires what `hostops.gpu_free` calls free (memory.used ≤ threshold on each GPU, no
    compute processes; the deploy job's GPU-clean step judges the same way); a failing
    nvidia-smi counts as busy; on timeout it says why, prints those GPUs' state and exits
    1 so systemd does not start vLLM. Every `$` reaches bash because `exec_word` writes it
    as `$$` (fact 5)."""
    if not data["gpu_free_wait"]:
        return None
    tries, interval = gpu_wait_iterations(data["gpu_free_wait_sec"])
    limit = data["gpu_free_threshold_mib"]
    gpus = wait_gpus(data["gpu_devices"])
    smi = f"nvidia-smi {gpus.option}"
    return (
        f"for _ in $(seq 1 {tries}); do "
        f"used=$({smi}--query-gpu=memory.used --format=csv,noheader,nounits) && "
        f"apps=$({smi}--query-compute-apps=pid --format=csv,noheader) && "
        '[ -z "$apps" ] && busy=0 && '
        f"for mib in $used; do {BASH_MEMORY_FREE.format(threshold=limit)} 2>/dev/null "
        "|| busy=1; done && "
        '[ "$busy" = 0 ] && exit 0; '
        f"sleep {interval}; done; "
        f'echo "{gpus.words} not free after {tries * interval} s (memory.used above {limit} '
        'MiB on some GPU, or compute processes running): not starting vLLM" >&2; '
        f"{smi}--query-gpu=index,memory.used --format=csv >&2; "
        f"{smi}--query-compute-apps=pid,process_name,used_memory --format=csv >&2; "
        "exit 1"
    )


def environment_items(data: dict[str, Any]) -> list[tuple[str, str]]:
    """`Environment=` assignments: the GPU selection first, then the profile's variables
    sorted by name (PostgreSQL's jsonb does not keep key order; the unit must not change
    with the database)."""
    items: list[tuple[str, str]] = []
    if data["gpu_devices"]:
        items.append(("CUDA_VISIBLE_DEVICES", data["gpu_devices"]))
    items.extend(sorted(data["environment"].items()))
    return items


def description(data: dict[str, Any]) -> str:
    if data["description"]:
        return data["description"]
    names = data["served_model_names"]
    generated = f"vLLM {names[0] if names else data['model']}"
    # A trailing backslash would continue the line in a unit file (a model path may end in
    # one); the generated default simply drops it. Found by tests/units/test_property.py.
    return generated.rstrip("\\").rstrip()


def render_context(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": data["name"],
        "description": description(data),
        "user": data["user"],
        "group": data["group"],
        "working_directory": data["working_directory"],
        "environment": environment_items(data),
        "environment_file": data.get("environment_file") or "",
        "gpu_wait_script": gpu_wait_script(data),
        "exec_start": exec_start_groups(data),
        "restart": data["restart"],
        "restart_sec": data["restart_sec"],
        "timeout_start_sec": data["timeout_start_sec"],
        "timeout_stop_sec": data["timeout_stop_sec"],
        **_extra_context(data.get("unit_extra") or []),
    }


_TEMPLATE_SECTIONS = ("Unit", "Service", "Install")


def _extra_context(pairs: list[list[str]]) -> dict[str, Any]:
    """`unit_extra` for the template: lines of its own sections, at each section's end,
    then the other sections in the order they first appear."""
    by_section: dict[str, list[str]] = {}
    for section, line in pairs:
        by_section.setdefault(section, []).append(line)
    return {
        "extra": {name: by_section.get(name, []) for name in _TEMPLATE_SECTIONS},
        "extra_sections": [
            (n, lines) for n, lines in by_section.items() if n not in _TEMPLATE_SECTIONS
        ],
    }


def render_unit(data: dict[str, Any]) -> str:
    """The unit file text for (valid) profile data."""
    data = normalize_profile_data(data)
    return get_template(TEMPLATE_NAME).render(render_context(data))


# Settings whose line maps to one field (lint findings → form fields), from the table.
_KEY_FIELDS = {f.writes.name: f.name for f in fields_writing(Target.SETTING) if f.writes.line}


@dataclass(frozen=True)
class LineInfo:
    """What one line of a rendered unit shows: the profile field, and for ExecStart= the
    words of that line."""

    field: str
    words: tuple[str, ...] = ()


def line_map(data: dict[str, Any], text: str) -> dict[int, LineInfo]:
    """1-based line number of `text` (rendered from `data`) → the field it shows."""
    data = normalize_profile_data(data)
    groups = exec_start_groups(data)
    result: dict[int, LineInfo] = {}
    in_exec = -1  # index of the ExecStart group on the current line, -1 outside
    for number, line in enumerate(split_lines(text), start=1):
        if in_exec >= 0:
            result[number] = LineInfo(groups[in_exec].field, groups[in_exec].words)
            in_exec = in_exec + 1 if line.endswith(" \\") else -1
            continue
        key, eq, value = line.partition("=")
        if not eq:
            continue
        if key == "ExecStart":
            result[number] = LineInfo(groups[0].field, groups[0].words)
            in_exec = 1 if line.endswith(" \\") else -1
        elif key == "Environment":
            is_gpu = value.startswith("CUDA_VISIBLE_DEVICES=") and data["gpu_devices"]
            result[number] = LineInfo("gpu_devices" if is_gpu else "environment")
        elif key in _KEY_FIELDS:
            result[number] = LineInfo(_KEY_FIELDS[key])
    return result


def line_fields(data: dict[str, Any], text: str) -> dict[int, str]:
    """1-based line number → profile field (for showing findings next to form fields)."""
    return {number: info.field for number, info in line_map(data, text).items()}
