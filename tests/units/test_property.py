"""Property: every valid profile renders to a unit that

- validates (`validate_profile_data` accepts it: no false rejections),
- has zero lint errors, ShellCheck on, against its target systemd and vLLM versions,
- gives back exactly `profile_argv(data)` as the linter's `--show-argv` (round trip), and
- the real `systemd-analyze verify` loads (one batched call for all examples).

Values are nasty on purpose: spaces, quotes, `$`, `%`, `\\`, `;`, `#`, non-ASCII in model
names, served names, environment values and extra arguments.
"""

from __future__ import annotations

import atexit
import re
import shutil
import subprocess
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linting.findings import Severity
from linting.options import LintOptions
from linting.systemd.catalog import available_versions as systemd_versions
from linting.vllm.catalog import available_versions as vllm_versions
from units.linting import lint_profile_data
from units.models import RESTART_CHOICES
from units.names import validate_unit_name
from units.rendering import profile_argv, render_unit
from units.speculative import method_shape, spec_methods
from units.validation import GPU_WAIT_MARGIN_SEC, field_choices, validate_profile_data

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")

# Real executables (systemd-analyze verify checks that ExecStart= exists), in directories
# whose names need quoting and `%%`.
_ROOT = Path(tempfile.mkdtemp(prefix="specadmin-prop-"))
atexit.register(shutil.rmtree, _ROOT, True)


def _fake(relative: str) -> str:
    path = _ROOT / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return str(path)


EXECUTABLES = [
    _fake("opt/vllm/bin/vllm"),
    _fake("a venv %n; #1/bin/vllm"),
    _fake("vénv/bin/python3"),
    _fake("py env/bin/python3.11"),
]

NASTY = [*" '\"$%\\;#{}=,.:@!&|<>()*?~`^", "$HOME", "${X}", "%n", "$$", "%%", "\\n"]
# Not Cf/Zl/Zp either: fields refuse characters that display differently than systemd
# reads them (bidi, zero-width, line separators; units/unicode_text.py).
_chars = st.one_of(
    st.sampled_from(NASTY),
    st.characters(blacklist_categories=("Cc", "Cs", "Cf", "Zl", "Zp")),
    st.just("\t"),
)
# one argv value: anything but control characters (tab allowed), never an option
value_text = (
    st.lists(_chars, min_size=1, max_size=8)
    .map("".join)
    .filter(lambda s: "\t" not in s)
    .map(str.strip)
    .filter(lambda s: bool(s) and not s.startswith("-"))
)
extra_value = (
    st.lists(_chars, min_size=1, max_size=8).map("".join).filter(lambda s: not s.startswith("-"))
)
env_value = st.lists(_chars, max_size=8).map("".join)


def _extra_groups() -> st.SearchStrategy[list[list[str]]]:
    group = st.one_of(
        extra_value.map(lambda v: ["--api-key", v]),
        extra_value.map(lambda v: ["--revision", v]),
        extra_value.map(lambda v: ["--download-dir", v]),
        st.just(["--enable-prefix-caching"]),
        st.integers(0, 2**31 - 1).map(lambda n: ["--seed", str(n)]),
        st.sampled_from(["8192", "16384"]).map(lambda v: ["--max-num-batched-tokens", v]),
    )
    return st.lists(group, max_size=3, unique_by=lambda g: g[0])


@st.composite
def valid_profiles(draw: st.DrawFn) -> dict[str, Any]:
    vllm = draw(st.sampled_from(vllm_versions()))
    tp = draw(st.integers(1, 8))
    gpus = draw(
        st.one_of(
            st.just(""),
            st.permutations(list(range(12))).flatmap(
                lambda p: st.integers(tp, 12).map(lambda k: ",".join(map(str, p[:k])))
            ),
            st.integers(tp, 8).map(
                lambda k: ",".join(f"GPU-{i:08x}-1111-2222-3333-444455556666" for i in range(k))
            ),
        )
    )
    data: dict[str, Any] = {
        "name": draw(st.from_regex(r"[a-z][a-z0-9_.:-]{0,24}", fullmatch=True).filter(_valid_name)),
        "description": draw(
            st.one_of(st.just(""), value_text.filter(lambda s: not s.endswith("\\")))
        ),
        "vllm_executable": draw(st.sampled_from(EXECUTABLES)),
        "model": draw(value_text),
        "served_model_names": draw(st.lists(value_text, max_size=3, unique=True)),
        "host": draw(st.sampled_from(["0.0.0.0", "127.0.0.1", "::", "localhost", "gpu-1.lan"])),
        "port": draw(st.integers(1, 65535)),
        "tensor_parallel_size": tp,
        "gpu_devices": gpus,
        "gpu_memory_utilization": draw(
            st.one_of(st.none(), st.integers(1, 1000).map(lambda n: str(Decimal(n) / 1000)))
        ),
        "max_model_len": draw(
            st.sampled_from(["", "4096", "32k", "32K", "128k", "1m", "25.6k", "131072"])
        ),
        "max_num_seqs": draw(st.one_of(st.none(), st.integers(1, 1024))),
        "quantization": draw(st.sampled_from(["", *field_choices("quantization", vllm)])),
        "kv_cache_dtype": draw(st.sampled_from(["", *field_choices("kv_cache_dtype", vllm)])),
        "trust_remote_code": draw(st.booleans()),
        "enable_expert_parallel": draw(st.booleans()),
        "extra_args": [w for g in draw(_extra_groups()) for w in g],
        "environment": draw(
            st.dictionaries(
                st.from_regex(r"[A-Z_][A-Z0-9_]{0,10}", fullmatch=True).filter(
                    lambda k: k != "CUDA_VISIBLE_DEVICES"
                ),
                env_value,
                max_size=3,
            )
        ),
        "user": draw(
            st.one_of(st.just(""), st.from_regex(r"[a-z_][a-z0-9_-]{0,15}", fullmatch=True))
        ),
        "group": draw(st.one_of(st.just(""), st.integers(0, 65534).map(str))),
        "working_directory": draw(
            st.one_of(
                st.just(""),
                st.lists(
                    st.text(alphabet="abcé %$;#,_-", min_size=1, max_size=6)
                    .map(str.strip)
                    .filter(lambda s: s not in ("", ".", "..")),
                    min_size=1,
                    max_size=3,
                ).map(lambda parts: "/" + "/".join(parts)),
            )
        ),
        "restart": draw(st.sampled_from([c for c, _ in RESTART_CHOICES])),
        "restart_sec": draw(st.integers(0, 600)),
        "timeout_stop_sec": draw(st.integers(1, 600)),
        "gpu_free_wait": draw(st.booleans()),
        "gpu_free_wait_sec": draw(st.integers(1, 900)),
        "gpu_free_threshold_mib": draw(st.integers(0, 80_000)),
        "target_vllm_version": vllm,
        "target_systemd_version": draw(st.sampled_from(systemd_versions())),
    }
    data["timeout_start_sec"] = (
        data["gpu_free_wait_sec"] + GPU_WAIT_MARGIN_SEC + draw(st.integers(0, 3600))
    )
    data.update(_spec(draw, vllm, tp))
    return data


def _valid_name(name: str) -> bool:
    try:
        validate_unit_name(name)
    except Exception:
        return False
    return True


def _spec(draw: st.DrawFn, vllm: str, tp: int) -> dict[str, Any]:
    method = draw(st.sampled_from(["", *spec_methods(vllm)]))
    if not method:
        return {}
    shape = method_shape(method)
    assert shape is not None
    result: dict[str, Any] = {"spec_method": method}

    def maybe(field: str, strategy: st.SearchStrategy[Any]) -> None:
        if field not in shape.takes:
            return
        if field in shape.requires or draw(st.booleans()):
            result[field] = draw(strategy)

    maybe("spec_num_tokens", st.integers(1, 10))
    maybe("spec_draft_model", value_text)
    maybe("spec_draft_tensor_parallel_size", st.integers(1, tp))
    lo = draw(st.integers(1, 6))
    maybe("spec_prompt_lookup_min", st.just(lo))
    maybe("spec_prompt_lookup_max", st.integers(lo, 8))
    return result


def test_every_valid_profile_renders_to_a_clean_unit_systemd_loads(tmp_path: Path) -> None:
    rendered: list[tuple[dict[str, Any], str]] = []

    @settings(
        max_examples=60,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(valid_profiles())
    def check(data: dict[str, Any]) -> None:
        assert validate_profile_data(data) == {}
        report = lint_profile_data(data, LintOptions(shellcheck=True))
        errors = [
            (f.code, f.span.start, f.message)
            for f in report.findings
            if f.severity >= Severity.ERROR
        ]
        assert errors == []
        exec_start = [c for c in report.files[0].commands if c.key == "ExecStart"]
        assert len(exec_start) == 1
        assert list(exec_start[0].argv) == profile_argv(data)
        rendered.append((data, render_unit(data)))

    check()
    assert len(rendered) >= 50

    if SYSTEMD_ANALYZE is None:
        pytest.skip("systemd-analyze is not installed")
    paths = []
    for i, (_, text) in enumerate(rendered):
        path = tmp_path / f"prop-{i:03d}.service"
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    result = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", *paths],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    output = (result.stdout + result.stderr).strip()
    failing = sorted({int(m) for m in _unit_numbers(output)})
    assert result.returncode == 0 and not output, (
        output + "\n\n" + "\n\n".join(f"{rendered[i][1]}\n{rendered[i][0]!r}" for i in failing[:3])
    )


def _unit_numbers(output: str) -> list[str]:
    return re.findall(r"prop-(\d{3})\.service", output)
