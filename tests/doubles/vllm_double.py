"""TEST DOUBLE for `vllm serve`: argument checks, GPU memory, OpenAI API and metrics.

What it reproduces, and why (each is something specadmin must observe on a real host):
- argument parsing from the generated flag catalog of the targeted vLLM version (argparse
  errors exit 2; `--speculative-config` is a JSON-typed argparse option, and its *content* is
  validated later, at engine-config time, exit 1 with the version's error text);
- an EngineCore child process that shows as `VLLM::EngineCore` in `ps`/nvidia-smi and holds
  "GPU memory" (gpu_state registrations) on the GPUs picked by CUDA_VISIBLE_DEVICES and
  --tensor-parallel-size; start-up fails like vLLM when another process holds that memory;
- a configurable load time, then an OpenAI-compatible HTTP API whose streamed tokens follow an
  exactly known schedule, with spec-decode counters in /metrics that match the tokens sent;
- fault modes: leftover_worker, ignore_sigterm, crash_after_start, never_healthy.

Configuration: the "vllm" section of /etc/gpu-double/config.json, overridden by environment
variables VLLM_DOUBLE_* (see DoubleConfig). Stdlib only. Never imported by product code.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

try:  # installed in a test host as package `doubles`; in the checkout as `tests.doubles`
    from . import gpu_state
except ImportError:  # pragma: no cover - run as a plain script
    import gpu_state  # type: ignore[no-redef]

DEFAULT_VERSION = "0.16.0"
# Where the flag catalogs are generated (linting/vllm/catalogs in the checkout).
REPO_CATALOG_DIR = str(Path(__file__).resolve().parents[2] / "linting/vllm/catalogs")
FIXTURE_CATALOG_DIR = str(Path(__file__).resolve().parent / "fixtures")
FAULTS = ("leftover_worker", "ignore_sigterm", "crash_after_start", "never_healthy")
ENGINE_CORE_TITLE = "VLLM::EngineCore"


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


# --------------------------------------------------------------------------------------
# configuration


@dataclass
class DoubleConfig:
    """Knobs of the double; env VLLM_DOUBLE_<NAME> overrides config-file key <name>."""

    version: str = DEFAULT_VERSION
    catalog_dirs: list[str] = field(default_factory=lambda: [REPO_CATALOG_DIR])
    config_delay_s: float = 0.2  # parse → engine config (spec config validated here)
    load_s: float = 2.0  # EngineCore holds GPU memory, HTTP not up yet
    ttft_ms: float = 50.0
    itl_ms: float = 10.0
    accepted_per_step: int | None = None  # default: num_speculative_tokens // 2
    faults: list[str] = field(default_factory=list)
    crash_after_s: float = 2.0
    default_max_tokens: int = 16

    @classmethod
    def load(cls, gpu: gpu_state.GpuConfig, env: dict[str, str] | None = None) -> DoubleConfig:
        env = dict(os.environ if env is None else env)
        raw = gpu.section("vllm")
        cfg = cls()
        for name, current in vars(cls()).items():
            value: Any = raw.get(name, current)
            env_value = env.get(f"VLLM_DOUBLE_{name.upper()}")
            if env_value is not None:
                value = env_value
            setattr(cfg, name, _coerce(name, value, current))
        unknown = [f for f in cfg.faults if f not in FAULTS]
        if unknown:
            raise ValueError(f"unknown vllm double faults {unknown}; known: {FAULTS}")
        return cfg


def _coerce(name: str, value: Any, default: Any) -> Any:
    if name in ("faults", "catalog_dirs"):
        if isinstance(value, str):
            return [v.strip() for v in value.replace(":", ",").split(",") if v.strip()]
        return list(value)
    if name == "accepted_per_step":
        return None if value in (None, "", "none") else int(value)
    if isinstance(default, float):
        return float(value)
    if isinstance(default, int):
        return int(value)
    return str(value)


# --------------------------------------------------------------------------------------
# token schedule and spec-decode accounting (pure: tested without a host)


@dataclass(frozen=True)
class Chunk:
    """One streamed chunk: when it is sent (seconds after the request) and what it counts."""

    at_s: float
    tokens: int
    drafts: int
    draft_tokens: int
    accepted: int


def plan_chunks(
    max_tokens: int,
    *,
    ttft_s: float,
    itl_s: float,
    num_speculative_tokens: int = 0,
    accepted_per_step: int | None = None,
) -> list[Chunk]:
    """The exact stream for a request.

    Prefill yields 1 token at ttft. Every later step is one draft of N proposed tokens, of
    which `accepted_per_step` (a) are accepted, so the step emits a + 1 tokens (the bonus
    token); steps are itl apart. Without spec decoding each step emits 1 token.
    The last step is cut short at max_tokens and then counts only the accepted tokens sent.
    """
    if max_tokens <= 0:
        return []
    n = max(0, num_speculative_tokens)
    a = n // 2 if accepted_per_step is None else max(0, min(accepted_per_step, n))
    chunks = [Chunk(at_s=ttft_s, tokens=1, drafts=0, draft_tokens=0, accepted=0)]
    left = max_tokens - 1
    step = 0
    while left > 0:
        step += 1
        tokens = min(a + 1, left)
        if n:
            chunk = Chunk(ttft_s + step * itl_s, tokens, 1, n, tokens - 1)
        else:
            chunk = Chunk(ttft_s + step * itl_s, tokens, 0, 0, 0)
        chunks.append(chunk)
        left -= tokens
    return chunks


def count_prompt_tokens(text: str) -> int:
    """Whitespace words: a deterministic stand-in for a tokenizer."""
    return len(text.split())


def token_text(index: int) -> str:
    return f" tok{index}"


# --------------------------------------------------------------------------------------
# catalog-driven argument parsing


class CatalogMissing(RuntimeError):
    pass


def find_catalog(version: str, dirs: Sequence[str]) -> Path:
    for d in dirs:
        path = Path(d) / f"vllm-{version}.json"
        if path.is_file():
            return path
    raise CatalogMissing(f"no flag catalog vllm-{version}.json in {list(dirs)}")


def load_catalog(version: str, dirs: Sequence[str]) -> dict[str, Any]:
    with open(find_catalog(version, dirs)) as f:
        return json.load(f)


def human_readable_int(value: str) -> int:
    """vLLM's --max-model-len parser: 32k = 32000, 32K = 32768 (decimal vs binary suffix)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT]?)", value.strip())
    if not match:
        raise ValueError(f"Invalid number: {value}")
    number, suffix = match.groups()
    if not suffix:
        return int(number)
    power = "kmgt".index(suffix.lower()) + 1
    base = 1000 if suffix.islower() else 1024
    if suffix.isupper() and "." in number:
        raise ValueError(f"Decimals are not allowed with binary suffixes: {value}")
    return int(float(number) * base**power)


def _parse_bool(value: str) -> bool:
    lowered = value.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError(value)


_BASE_TYPES: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "str": str,
    "json": json.loads,
    "human_int": human_readable_int,
    "bool": _parse_bool,
}


def _type_func(flag: dict[str, Any], version: tuple[int, ...]) -> Callable[[str], Any] | None:
    """The argparse `type=` that the targeted vLLM uses, so error texts match.

    vllm/engine/arg_utils.py: plain `int`/`float`/`json.loads` give argparse's
    "invalid int value: 'x'"; `optional_type` (fields that may be None, catalog
    also_accepts '' / 'None') and, from 0.10, `parse_type(json.loads)` raise
    "Value x cannot be converted to <class 'int'>." Both are argparse errors: exit 2.
    """
    kind = flag.get("type")
    if kind in (None, "null", "bool") and flag.get("kind") != "value":
        return None
    base = _BASE_TYPES.get(kind or "str", str)
    also = [str(v) for v in flag.get("also_accepts") or []]
    optional = "None" in also or "" in also
    wrapped = optional or (kind == "json" and version >= (0, 10))
    specials = [v for v in also if v not in ("", "None")]  # e.g. max_model_len: -1, auto
    if not wrapped and not specials:
        return base

    def converted(val: str) -> Any:
        if optional and val in ("", "None"):
            return None
        if val in specials:
            return val
        if not wrapped:
            return base(val)
        try:
            return base(val)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"Value {val} cannot be converted to {base}.") from exc

    converted.__name__ = getattr(base, "__name__", str(kind))
    return converted


SERVE_USAGE = "vllm serve [model_tag] [options]"
TOP_USAGE = "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ..."


class _ServeParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own format: usage + "prog: error:"
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def build_parser(catalog: dict[str, Any], version: str) -> argparse.ArgumentParser:
    meta = catalog.get("parser") or {}
    parser = _ServeParser(
        prog="vllm serve",
        usage=SERVE_USAGE,
        add_help=False,
        allow_abbrev=bool(meta.get("allow_abbrev", True)),
    )
    for positional in catalog.get("positionals") or ["model_tag"]:
        parser.add_argument(positional, nargs="?", default=None)
    vt = version_tuple(version)
    seen: set[str] = set()
    for flag in catalog.get("flags", []):
        names = [n for n in flag.get("names", []) if n.startswith("-") and n not in seen]
        if not names:
            continue
        kind = flag.get("kind", "value")
        kwargs: dict[str, Any] = {}
        if flag.get("dest"):
            kwargs["dest"] = flag["dest"]
        if kind == "store_true":
            kwargs["action"] = "store_true"
        elif kind == "store_false":
            kwargs["action"] = "store_false"
        elif kind == "boolean_optional":
            names = [n for n in names if not n.startswith("--no-")]
            kwargs["action"] = argparse.BooleanOptionalAction
            kwargs["default"] = None
        else:
            func = _type_func(flag, vt)
            if func is not None:
                kwargs["type"] = func
            if flag.get("choices"):
                choices = list(flag["choices"])
                if "None" in (flag.get("also_accepts") or []):
                    choices.append(None)
                kwargs["choices"] = choices
            if flag.get("nargs") not in (None, "null"):
                kwargs["nargs"] = flag["nargs"]
        try:
            action = parser.add_argument(*names, **kwargs)
        except argparse.ArgumentError:
            continue  # a name generated twice: the first definition wins, like vLLM
        if flag.get("deprecated"):
            _DEPRECATED.add(action.dest)
        seen.update(names)
        if kind == "boolean_optional":
            seen.update("--no-" + n[2:] for n in names if n.startswith("--"))
    # A catalog without the frontend's --host/--port could not be served at all.
    for name, kw in (("--host", {}), ("--port", {"type": int})):
        if name not in seen:
            parser.add_argument(name, **kw)
    parser.add_argument("-h", "--help", action="store_true")
    return parser


_DEPRECATED: set[str] = set()


def normalize_args(args: Sequence[str], parser_meta: dict[str, Any]) -> list[str]:
    """FlexibleArgumentParser: `--max_model_len` == `--max-model-len`; `--model X` moved.

    0.8.5 turns every `_` of the key into `-`; later versions only those before the first
    `.` (dotted JSON keys such as `--speculative-config.num_speculative_tokens`).
    """
    whole_key = parser_meta.get("underscore_to_dash") == "whole_key"
    out: list[str] = []
    for arg in args:
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            if whole_key:
                key = "--" + key[2:].replace("_", "-")
            else:
                head, dot, tail = key[2:].partition(".")
                key = "--" + head.replace("_", "-") + dot + tail
            out.append(key + eq + value)
        else:
            out.append(arg)
    model_at = [i for i, a in enumerate(out) if a == "--model" or a.startswith("--model=")]
    if model_at and parser_meta.get("model_option") == "moved_to_positional":
        i = model_at[0]
        if out[i] == "--model" and i + 1 < len(out):
            out = [out[i + 1], *out[:i], *out[i + 2 :]]
        elif out[i] != "--model":
            out = [out[i].removeprefix("--model="), *out[:i], *out[i + 1 :]]
    elif model_at and parser_meta.get("model_option") == "error":
        raise EngineConfigError(
            "ValueError: With `vllm serve`, you should provide the model as a positional "
            "argument or in a config file instead of via the `--model` option."
        )
    return out


def _expand_dotted(args: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """`--speculative-config.method ngram` → merged into `--speculative-config` JSON."""
    merged: dict[str, dict[str, Any]] = {}
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        key = arg.partition("=")[0]
        if arg.startswith("--") and "." in key:
            head, _, path = key[2:].partition(".")
            if "=" in arg:
                value = arg.partition("=")[2]
            elif i + 1 < len(args):
                i += 1
                value = args[i]
            else:
                value = ""
            try:
                parsed: Any = json.loads(value)
            except ValueError:
                parsed = value
            node = merged.setdefault(head, {})
            parts = path.split(".")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = parsed
        else:
            out.append(arg)
        i += 1
    for head, value in merged.items():
        out += [f"--{head}", json.dumps(value)]
    return out


def parse_serve_args(
    catalog: dict[str, Any], version: str, args: Sequence[str]
) -> argparse.Namespace:
    """Parse like `vllm serve`; raises SystemExit(2) after printing argparse-style errors."""
    parser = build_parser(catalog, version)
    meta = catalog.get("parser") or {}
    normalized = normalize_args(args, meta)
    if meta.get("dotted_json_keys"):
        normalized = _expand_dotted(normalized, parser)
    ns, extra = parser.parse_known_args(normalized)
    if extra:
        # Unknown options bubble up to the top-level `vllm` parser, hence its prog name.
        sys.stderr.write(f"{TOP_USAGE}\nvllm: error: unrecognized arguments: {' '.join(extra)}\n")
        raise SystemExit(2)
    for dest in sorted(_DEPRECATED):
        if getattr(ns, dest, None) not in (None, False):
            log("WARNING", "argparse_utils.py:80", f"argument '{dest}' is deprecated")
    return ns


# --------------------------------------------------------------------------------------
# engine-config validation (exit 1, after start-up has begun)


class EngineConfigError(Exception):
    """Carries the exact lines vLLM would print (traceback tail) for a bad engine config."""


def _pydantic_error(model: str, errors: list[tuple[str, str, str, Any]]) -> EngineConfigError:
    """Format like pydantic-core 2.x: `N validation error(s) for Model` + one block each."""
    count = len(errors)
    lines = [
        "pydantic_core._pydantic_core.ValidationError: "
        f"{count} validation error{'s' if count != 1 else ''} for {model}"
    ]
    for loc, msg, etype, value in errors:
        lines.append(loc)
        lines.append(
            f"  {msg} [type={etype}, input_value={value!r}, input_type={type(value).__name__}]"
        )
        lines.append(
            f"    For further information visit https://errors.pydantic.dev/2.12/v/{etype}"
        )
    return EngineConfigError("\n".join(lines))


def _or_list(values: Sequence[str]) -> str:
    quoted = [f"'{v}'" for v in values]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def validate_speculative_config(
    spec: dict[str, Any] | None, catalog: dict[str, Any], version: str
) -> dict[str, Any] | None:
    """Apply the version's SpeculativeConfig rules (docs/architecture.md, "vLLM")."""
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise EngineConfigError(
            f"TypeError: vllm.config.speculative.SpeculativeConfig() argument after ** must be "
            f"a mapping, not {type(spec).__name__}"
        )
    meta = catalog.get("speculative_config") or {}
    fields = meta.get("fields") or {}
    mode = meta.get("unknown_keys", "validation_error")
    pydantic = mode == "validation_error"
    unknown = [k for k in spec if fields and k not in fields]
    errors: list[tuple[str, str, str, Any]] = []
    if unknown:
        if mode == "type_error":
            raise EngineConfigError(
                "TypeError: SpeculativeConfig.__init__() got an unexpected keyword argument "
                f"'{unknown[0]}'"
            )
        if mode == "validation_error":
            for key in unknown:
                errors.append(
                    (key, "Unexpected keyword argument", "unexpected_keyword_argument", spec[key])
                )
        # "ignored" (0.11-0.15): silently dropped, a different config runs than written.
        spec = {k: v for k, v in spec.items() if k not in unknown}
    method = spec.get("method")
    accepted = meta.get("methods_accepted")
    if method is not None and accepted and method not in accepted:
        if pydantic:
            errors.append(
                ("method", f"Input should be {_or_list(accepted)}", "literal_error", method)
            )
        else:
            raise EngineConfigError(f"ValueError: Unsupported speculative method: '{method}'")
    n = spec.get("num_speculative_tokens")
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n <= 0):
        if pydantic and isinstance(n, int):
            errors.append(
                ("num_speculative_tokens", "Input should be greater than 0", "greater_than", n)
            )
        elif not pydantic:
            raise EngineConfigError(
                f"ValueError: Expected num_speculative_tokens to be greater than zero ({n})."
            )
    if errors:
        raise _pydantic_error("SpeculativeConfig", errors)
    if "tensor_parallel_size" in spec:
        raise EngineConfigError(
            "ValueError: tensor_parallel_size is not a valid speculative config key; "
            "use draft_tensor_parallel_size"
        )
    lo, hi = spec.get("prompt_lookup_min"), spec.get("prompt_lookup_max")
    if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
        raise EngineConfigError(
            f"ValueError: prompt_lookup_min={lo} must be <= prompt_lookup_max={hi}"
        )
    for name, value in (("prompt_lookup_min", lo), ("prompt_lookup_max", hi)):
        if isinstance(value, int) and value < 1:
            raise EngineConfigError(f"ValueError: {name}={value} must be > 0")
    if spec.get("method") is not None and n is None and spec.get("method") != "mtp":
        raise EngineConfigError(
            "ValueError: num_speculative_tokens must be provided with speculative model unless"
            " the draft model config contains an n_predict parameter."
        )
    return spec


def validate_memory_utilization(value: float, version: str) -> None:
    if 0 < value <= 1:
        return
    if version_tuple(version) >= (0, 11):
        etype, msg = (
            ("greater_than", "Input should be greater than 0")
            if value <= 0
            else ("less_than_equal", "Input should be less than or equal to 1")
        )
        raise _pydantic_error("CacheConfig", [("gpu_memory_utilization", msg, etype, value)])
    raise EngineConfigError(
        f"ValueError: GPU memory utilization must be less than 1.0. Got {value}."
    )


def pick_gpus(visible: str | None, world_size: int, gpu: gpu_state.GpuConfig) -> list[int]:
    """GPU indices the engine will use, honouring CUDA_VISIBLE_DEVICES (indices or UUIDs)."""
    if visible is None:
        available = list(range(gpu.gpu_count))
    elif not visible.strip():
        available = []
    else:
        available = []
        by_uuid = {gpu.uuid(i): i for i in range(gpu.gpu_count)}
        for item in visible.split(","):
            item = item.strip()
            if item.isdigit() and int(item) < gpu.gpu_count:
                available.append(int(item))
            elif item in by_uuid:
                available.append(by_uuid[item])
            else:
                break  # CUDA stops at the first invalid entry
    if not available:
        raise EngineConfigError("RuntimeError: No CUDA GPUs are available")
    if world_size > len(available):
        raise EngineConfigError(
            f"ValueError: World size ({world_size}) is larger than the number of available "
            f"GPUs ({len(available)}) in this node. If this is intentional and you are using "
            "Ray, ..."
        )
    return available[:world_size]


# --------------------------------------------------------------------------------------
# logging like vLLM (journald captures stdout/stderr)


def log(level: str, where: str, message: str) -> None:
    stamp = time.strftime("%m-%d %H:%M:%S")
    stream = sys.stderr if level in ("ERROR", "WARNING") else sys.stdout
    stream.write(f"{level} {stamp} [{where}] {message}\n")
    stream.flush()


def fail(lines: str) -> int:
    """A traceback-like tail on stderr, as an uncaught exception in vLLM would print."""
    sys.stderr.write("Traceback (most recent call last):\n")
    sys.stderr.write('  File "/usr/local/bin/vllm", line 8, in <module>\n')
    sys.stderr.write("    sys.exit(main())\n")
    sys.stderr.write(lines.rstrip("\n") + "\n")
    sys.stderr.flush()
    return 1


# --------------------------------------------------------------------------------------
# EngineCore child: process title, cgroup escape, GPU registrations


def set_process_title(title: str) -> None:
    """Like setproctitle: comm (15 bytes, what prctl(PR_SET_NAME) sets) and the argv memory.

    No ctypes: minimal hosts may lack libffi. /proc/self/comm is writable by the process.
    """
    with contextlib.suppress(OSError), open("/proc/self/comm", "w") as comm:
        comm.write(title[:15])
    with open("/proc/self/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    arg_start, arg_end = int(rest[45]), int(rest[46])
    size = arg_end - arg_start
    data = title.encode()[: size - 1].ljust(size, b"\0")
    with contextlib.suppress(OSError), open("/proc/self/mem", "r+b", buffering=0) as mem:
        mem.seek(arg_start)
        mem.write(data)


def escape_unit_cgroup(pid: int) -> list[str]:
    """Move pid next to PID 1 (init.scope) in every cgroup hierarchy, out of the unit.

    A worker outside the unit's cgroup survives `systemctl stop` whatever KillMode says:
    this reproduces "GPU still busy after stop" deterministically.
    """
    moved: list[str] = []
    mounts: dict[str, str] = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            sep = parts.index("-")
            fstype, options = parts[sep + 1], parts[sep + 3]
            if fstype == "cgroup2":
                mounts["0:"] = parts[4]
            elif fstype == "cgroup":
                for opt in options.split(","):
                    if opt.startswith("name=") or opt in ("cpu", "memory", "pids", "cpuset"):
                        mounts.setdefault(opt, parts[4])
    with open("/proc/1/cgroup") as f:
        for line in f:
            hid, controllers, path = line.rstrip("\n").split(":", 2)
            key = "0:" if hid == "0" else None
            if key is None:
                for c in controllers.split(","):
                    if c in mounts:
                        key = c
                        break
            if key is None or key not in mounts:
                continue
            target = Path(mounts[key]) / path.lstrip("/") / "cgroup.procs"
            try:
                target.write_text(f"{pid}\n")
                moved.append(str(target))
            except OSError:
                continue
    return moved


def _engine_core(
    gpus: list[int],
    mib: int,
    gpu: gpu_state.GpuConfig,
    leftover: bool,
    ignore_sigterm: bool,
    report_fd: int,
) -> None:
    """Body of the forked EngineCore; never returns."""
    code = 0
    try:
        set_process_title(ENGINE_CORE_TITLE)
        if leftover:
            os.setsid()
            escape_unit_cgroup(os.getpid())
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
        else:
            on_term = signal.SIG_IGN if ignore_sigterm else (lambda *_: os._exit(0))
            signal.signal(signal.SIGTERM, on_term)
        used = gpu_state.used_mib(gpu)
        for i in gpus:
            free = gpu.memory_total_mib - used[i]
            if free < mib:
                gib = 1024
                msg = (
                    f"ValueError: Free memory on device cuda:{i} "
                    f"({free / gib:.2f}/{gpu.memory_total_mib / gib:.2f} GiB) on startup is less "
                    f"than desired GPU memory utilization ({mib / gpu.memory_total_mib:.2f}, "
                    f"{mib / gib:.2f} GiB). Decrease GPU memory utilization or reduce GPU "
                    "memory used by other processes."
                )
                os.write(report_fd, (msg + "\n").encode())
                os._exit(1)
        for i in gpus:
            gpu_state.register(gpu, i, os.getpid(), mib)
        os.write(report_fd, b"ready\n")
        os.close(report_fd)
        parent = os.getppid()
        while True:
            # Dies with its API server like vLLM's EngineCore (a poll instead of PDEATHSIG).
            if not leftover and os.getppid() != parent:
                os._exit(0)
            time.sleep(0.2)
    except BaseException:  # never fall back into the parent's code path
        traceback.print_exc()
        code = 1
    os._exit(code)


@dataclass
class EngineCore:
    pid: int
    gpus: list[int]


def start_engine_core(
    gpus: list[int], mib: int, gpu: gpu_state.GpuConfig, faults: set[str]
) -> EngineCore:
    """Fork the child (before any thread exists) and wait until it holds its memory."""
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        leftover, stubborn = "leftover_worker" in faults, "ignore_sigterm" in faults
        _engine_core(gpus, mib, gpu, leftover, stubborn, write_fd)
    os.close(write_fd)
    with os.fdopen(read_fd) as report:
        answer = report.readline().strip()
    if answer != "ready":
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        raise EngineConfigError(
            (answer + "\n" if answer else "")
            + "RuntimeError: Engine core initialization failed. See root cause above. "
            f"Failed core proc(s): {{'EngineCore_DP0': {1 if answer else -9}}}"
        )
    return EngineCore(pid=pid, gpus=gpus)


# --------------------------------------------------------------------------------------
# HTTP server


@dataclass
class SpecMetrics:
    """Counters exported by /metrics; advanced only when a chunk is actually sent."""

    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    generation_tokens: int = 0
    prompt_tokens: int = 0
    requests_running: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, chunk: Chunk) -> None:
        with self.lock:
            self.drafts += chunk.drafts
            self.draft_tokens += chunk.draft_tokens
            self.accepted += chunk.accepted
            self.generation_tokens += chunk.tokens


def render_metrics(m: SpecMetrics, model: str, spec_enabled: bool) -> str:
    """Prometheus text format with vLLM v1 metric names and labels."""
    labels = f'engine="0",model_name="{model}"'
    series: list[tuple[str, str, str, float]] = [
        (
            "vllm:num_requests_running",
            "gauge",
            "Number of requests in model execution batches.",
            m.requests_running,
        ),
        (
            "vllm:prompt_tokens_total",
            "counter",
            "Number of prefill tokens processed.",
            m.prompt_tokens,
        ),
        (
            "vllm:generation_tokens_total",
            "counter",
            "Number of generation tokens processed.",
            m.generation_tokens,
        ),
    ]
    if spec_enabled:  # vLLM registers the spec-decode counters only with a spec config
        series += [
            (
                "vllm:spec_decode_num_drafts_total",
                "counter",
                "Number of spec decoding drafts.",
                m.drafts,
            ),
            (
                "vllm:spec_decode_num_draft_tokens_total",
                "counter",
                "Number of draft tokens.",
                m.draft_tokens,
            ),
            (
                "vllm:spec_decode_num_accepted_tokens_total",
                "counter",
                "Number of accepted tokens.",
                m.accepted,
            ),
        ]
    out = []
    for name, kind, help_text, value in series:
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} {kind}")
        out.append(f"{name}{{{labels}}} {float(value)}")
    return "\n".join(out) + "\n"


@dataclass
class ServerState:
    model: str
    served_names: list[str]
    max_model_len: int
    api_keys: list[str]
    cfg: DoubleConfig
    num_spec_tokens: int
    spec_enabled: bool
    metrics: SpecMetrics = field(default_factory=SpecMetrics)
    healthy: bool = True


def _sse(payload: dict[str, Any] | str) -> bytes:
    body = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {body}\n\n".encode()


class Handler(BaseHTTPRequestHandler):
    server_version = "uvicorn"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    state: ServerState  # set on the subclass made per server

    def log_message(self, format: str, *args: Any) -> None:
        log(
            "INFO",
            "launcher.py:46",
            f'{self.client_address[0]}:{self.client_address[1]} - "'
            f'{self.command} {self.path} HTTP/1.1" {args[1] if len(args) > 1 else ""}',
        )

    def _json(self, status: int, payload: Any) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _text(self, status: int, text: str, ctype: str = "text/plain; charset=utf-8") -> None:
        body = text.encode()
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _authorized(self) -> bool:
        keys = self.state.api_keys
        if not keys or not self.path.startswith("/v1"):
            return True
        if self.headers.get("Authorization") in [f"Bearer {k}" for k in keys]:
            return True
        self._json(401, {"error": "Unauthorized"})
        return False

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/health":
            self._text(200 if self.state.healthy else 503, "")
        elif path == "/metrics":
            self._text(
                200,
                render_metrics(
                    self.state.metrics, self.state.served_names[0], self.state.spec_enabled
                ),
                "text/plain; version=0.0.4; charset=utf-8",
            )
        elif path == "/version":
            self._json(200, {"version": self.state.cfg.version})
        elif path == "/v1/models":
            if not self._authorized():
                return
            now = int(time.time())
            data = [
                {
                    "id": name,
                    "object": "model",
                    "created": now,
                    "owned_by": "vllm",
                    "root": self.state.model,
                    "parent": None,
                    "max_model_len": self.state.max_model_len,
                }
                for name in self.state.served_names
            ]
            self._json(200, {"object": "list", "data": data})
        else:
            self._json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        if path not in ("/v1/completions", "/v1/chat/completions"):
            self._json(404, {"detail": "Not Found"})
            return
        if not self._authorized():
            return
        if not self.state.healthy:
            self._json(503, {"object": "error", "message": "EngineCore is dead", "code": 503})
            return
        length = int(self.headers.get("content-length") or 0)
        try:
            req = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._json(400, {"object": "error", "message": "invalid JSON", "code": 400})
            return
        model = req.get("model", self.state.served_names[0])
        if model not in self.state.served_names:
            self._json(
                404,
                {
                    "object": "error",
                    "message": f"The model `{model}` does not exist.",
                    "type": "NotFoundError",
                    "param": "model",
                    "code": 404,
                },
            )
            return
        chat = path.endswith("chat/completions")
        self._generate(req, model, chat)

    def _generate(self, req: dict[str, Any], model: str, chat: bool) -> None:
        started = time.monotonic()
        st = self.state
        if chat:
            prompt = " ".join(str(m.get("content", "")) for m in req.get("messages", []))
        else:
            raw = req.get("prompt", "")
            prompt = " ".join(raw) if isinstance(raw, list) else str(raw)
        prompt_tokens = count_prompt_tokens(prompt)
        max_tokens = req.get("max_completion_tokens") or req.get("max_tokens")
        max_tokens = int(max_tokens or st.cfg.default_max_tokens)
        chunks = plan_chunks(
            max_tokens,
            ttft_s=st.cfg.ttft_ms / 1000,
            itl_s=st.cfg.itl_ms / 1000,
            num_speculative_tokens=st.num_spec_tokens,
            accepted_per_step=st.cfg.accepted_per_step,
        )
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        created = int(time.time())
        obj = "chat.completion.chunk" if chat else "text_completion"
        usage = {
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + max_tokens,
            "completion_tokens": max_tokens,
        }
        with st.metrics.lock:
            st.metrics.requests_running += 1
            st.metrics.prompt_tokens += prompt_tokens
        try:
            if req.get("stream"):
                self._stream(req, rid, created, obj, model, chat, chunks, started, usage)
            else:
                texts = []
                emitted = 0
                for chunk in chunks:
                    _sleep_until(started + chunk.at_s)
                    st.metrics.add(chunk)
                    texts += [token_text(emitted + i) for i in range(chunk.tokens)]
                    emitted += chunk.tokens
                text = "".join(texts)
                choice: dict[str, Any] = {
                    "index": 0,
                    "finish_reason": "length",
                    "stop_reason": None,
                    "logprobs": None,
                }
                if chat:
                    choice["message"] = {"role": "assistant", "content": text}
                else:
                    choice["text"] = text
                self._json(
                    200,
                    {
                        "id": rid,
                        "object": "chat.completion" if chat else "text_completion",
                        "created": created,
                        "model": model,
                        "choices": [choice],
                        "usage": usage,
                    },
                )
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with st.metrics.lock:
                st.metrics.requests_running -= 1

    def _stream(
        self,
        req: dict[str, Any],
        rid: str,
        created: int,
        obj: str,
        model: str,
        chat: bool,
        chunks: list[Chunk],
        started: float,
        usage: dict[str, int],
    ) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        base = {"id": rid, "object": obj, "created": created, "model": model}
        emitted = 0
        for n, chunk in enumerate(chunks):
            _sleep_until(started + chunk.at_s)
            text = "".join(token_text(emitted + i) for i in range(chunk.tokens))
            emitted += chunk.tokens
            last = n == len(chunks) - 1
            finish = "length" if last else None
            if chat:
                if n == 0:  # the role chunk goes out together with the first token
                    self.wfile.write(
                        _sse(
                            base
                            | {
                                "choices": [
                                    {
                                        "index": 0,
                                        "delta": {"role": "assistant", "content": ""},
                                        "logprobs": None,
                                        "finish_reason": None,
                                    }
                                ]
                            }
                        )
                    )
                choice: dict[str, Any] = {
                    "index": 0,
                    "delta": {"content": text},
                    "logprobs": None,
                    "finish_reason": finish,
                }
            else:
                choice = {
                    "index": 0,
                    "text": text,
                    "logprobs": None,
                    "finish_reason": finish,
                    "stop_reason": None,
                }
            self.wfile.write(_sse(base | {"choices": [choice]}))
            self.wfile.flush()
            self.state.metrics.add(chunk)
        options = req.get("stream_options") or {}
        if options.get("include_usage"):
            self.wfile.write(_sse(base | {"choices": [], "usage": usage}))
        self.wfile.write(_sse("[DONE]"))
        self.wfile.flush()


def _sleep_until(deadline: float) -> None:
    """Absolute deadlines: chunk times do not drift with the time spent writing."""
    delay = deadline - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def make_server(host: str, port: int, state: ServerState) -> ThreadingHTTPServer:
    handler = type("BoundHandler", (Handler,), {"state": state})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


# --------------------------------------------------------------------------------------
# main


def _ns(ns: argparse.Namespace, name: str, default: Any = None) -> Any:
    value = getattr(ns, name, None)
    return default if value is None else value


def serve(argv: Sequence[str], gpu: gpu_state.GpuConfig, cfg: DoubleConfig) -> int:
    try:
        catalog = load_catalog(cfg.version, cfg.catalog_dirs)
    except CatalogMissing as exc:
        sys.stderr.write(f"vllm double: {exc}\n")
        return 3
    try:
        ns = parse_serve_args(catalog, cfg.version, argv)
    except EngineConfigError as exc:
        return fail(str(exc))
    if ns.help:
        sys.stdout.write(f"usage: {SERVE_USAGE}\n")
        return 0
    model = ns.model_tag or _ns(ns, "model", "Qwen/Qwen3-0.6B")
    served = _ns(ns, "served_model_name") or [model]
    served = [served] if isinstance(served, str) else list(served)
    stop = threading.Event()
    faults = set(cfg.faults)

    def on_sigterm(signum: int, frame: Any) -> None:
        if "ignore_sigterm" in faults:
            log("WARNING", "api_server.py:1", "fault ignore_sigterm: ignoring SIGTERM")
            return
        stop.set()

    signal.signal(signal.SIGTERM, on_sigterm)
    signal.signal(signal.SIGINT, on_sigterm)
    log("INFO", "api_server.py:1885", f"vLLM API server version {cfg.version}")
    log("INFO", "utils.py:328", f"non-default args: {argv}")
    if stop.wait(cfg.config_delay_s):
        return 0
    try:
        spec = validate_speculative_config(_ns(ns, "speculative_config"), catalog, cfg.version)
        util = float(_ns(ns, "gpu_memory_utilization", 0.9))
        validate_memory_utilization(util, cfg.version)
        world = int(_ns(ns, "tensor_parallel_size", 1)) * int(_ns(ns, "pipeline_parallel_size", 1))
        gpus = pick_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"), world, gpu)
        mib = int(util * gpu.memory_total_mib)
        log(
            "INFO",
            "core.py:73",
            f"Initializing a V1 LLM engine (v{cfg.version}) with config: "
            f"model={model!r}, speculative_config={spec}, tensor_parallel_size={world}",
        )
        engine = start_engine_core(gpus, mib, gpu, faults)
    except EngineConfigError as exc:
        return fail(str(exc))
    log("INFO", "gpu_model_runner.py:2000", f"Loading model {model} on GPUs {gpus}")
    if stop.wait(cfg.load_s):
        return _shutdown(engine, faults)
    num_spec = int((spec or {}).get("num_speculative_tokens") or 0)
    state = ServerState(
        model=model,
        served_names=served,
        max_model_len=_max_model_len(_ns(ns, "max_model_len", 4096)),
        api_keys=_as_list(_ns(ns, "api_key")),
        cfg=cfg,
        num_spec_tokens=num_spec,
        spec_enabled=spec is not None,
        healthy="never_healthy" not in faults,
    )
    host = _ns(ns, "host", "127.0.0.1")  # real vLLM binds all interfaces; tests stay on lo
    port = int(_ns(ns, "port", 8000))
    try:
        server = make_server(host, port, state)
    except OSError as exc:
        _shutdown(engine, faults)
        return fail(f"OSError: [Errno {exc.errno}] {exc.strerror}: ('{host}', {port})")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    log("INFO", "launcher.py:34", f"Starting vLLM API server 0 on http://{host}:{port}")
    log("INFO", "on.py:62", "Application startup complete.")
    deadline = time.monotonic() + cfg.crash_after_s if "crash_after_start" in faults else None
    while not stop.wait(0.2):
        if not gpu_state.pid_alive(engine.pid) and "leftover_worker" not in faults:
            _reap(engine.pid)
            log(
                "ERROR",
                "core_client.py:564",
                "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
            )
            server.shutdown()
            return fail(
                "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an "
                "issue. See stack trace (above) for the root cause."
            )
        if deadline is not None and time.monotonic() >= deadline:
            log("ERROR", "core.py:700", "fault crash_after_start: EngineCore failed")
            _kill_engine(engine)
            return fail("RuntimeError: CUDA error: an illegal memory access was encountered")
    log("INFO", "launcher.py:80", "Shutting down FastAPI HTTP server.")
    server.shutdown()
    return _shutdown(engine, faults)


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _max_model_len(value: Any) -> int:
    """`auto`/-1 mean "derived from the model" in vLLM; the double says 4096."""
    return value if isinstance(value, int) and value > 0 else 4096


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _kill_engine(engine: EngineCore) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(engine.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(engine.pid, 0)


def _shutdown(engine: EngineCore, faults: set[str]) -> int:
    if "leftover_worker" not in faults:
        _kill_engine(engine)
    return 0


def _children_gpu_config() -> gpu_state.GpuConfig:
    return gpu_state.load_config()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    gpu = _children_gpu_config()
    try:
        cfg = DoubleConfig.load(gpu)
    except ValueError as exc:
        sys.stderr.write(f"vllm double: {exc}\n")
        return 3
    if args[:1] in (["-v"], ["--version"]):
        sys.stdout.write(cfg.version + "\n")
        return 0
    if not args or args[0] != "serve":
        choice = args[0] if args else ""
        sys.stderr.write(
            f"{TOP_USAGE}\nvllm: error: argument subparser: invalid choice: '{choice}' (choose "
            "from 'chat', 'complete', 'serve', 'bench', 'collect-env', 'run-batch')\n"
        )
        return 2
    try:
        return serve(args[1:], gpu, cfg)
    except SystemExit as exc:
        return int(exc.code or 0)


def iter_sse(lines: Iterator[bytes]) -> Iterator[dict[str, Any] | str]:
    """Parse an SSE body (helper for tests and benchmarks against the double)."""
    for raw in lines:
        line = raw.decode().strip()
        if line.startswith("data: "):
            data = line[len("data: ") :]
            yield data if data == "[DONE]" else json.loads(data)


if __name__ == "__main__":
    sys.exit(main())
