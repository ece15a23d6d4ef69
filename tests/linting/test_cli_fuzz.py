"""`lintunits` on arbitrary bytes: exit 0, 1 or 2, never a traceback or an
"internal error" (which is lintunits' one-line report of a bug).

Files of random bytes, unit-like texts built from troublesome pieces (invalid UTF-8,
deep JSON, numbers past Python's limits, controls), and a few runs of the real command
with bytes on standard input. Bounded for CI (derandomized there: tests/conftest.py).
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linting.cli import run

ROOT = Path(__file__).resolve().parents[2]
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
PIECES = [
    b"[Service]\n",
    b"[Unit]\n",
    b"ExecStart=/opt/vllm/bin/vllm serve /m",
    b"ExecStartPre=/bin/bash -c '",
    b" --compilation-config '",
    b" --speculative-config '",
    b" --speculative-config.num_speculative_tokens ",
    b" --max-model-len ",
    b" --gpu-memory-utilization ",
    b" --tensor-parallel-size ",
    b"9" * 5000,
    b"k",
    b"1E+1000000",
    b"[" * 3000,
    b'{"a":' * 1500,
    b"}",
    b"'",
    b'"',
    b"\\",
    b"\\\n",
    b"\n",
    b"\r\n",
    b"\x00",
    b"\xff\xfe",
    b"\xe2\x80\xa8",  # U+2028
    b"\xe2\x80\xae",  # U+202E
    b"%",
    b"$",
    b"${X}",
    b"Environment=A=",
    b"EnvironmentFile=-/etc/x",
    b"=",
    b" ",
    b";",
]
UNITS = st.lists(st.one_of(st.sampled_from(PIECES), st.binary(max_size=12)), max_size=25).map(
    b"".join
)


def lint_file(path: Path, data: bytes, *extra: str) -> tuple[int, str]:
    path.write_bytes(data)
    out, err = io.StringIO(), io.StringIO()
    code = run([str(path), *extra], out, err)
    return code, err.getvalue()


def assert_clean_exit(code: int, err: str) -> None:
    assert code in (0, 1, 2), (code, err[-300:])
    assert "Traceback" not in err and "internal error" not in err, err[-500:]


@FUZZ
@given(data=st.binary(max_size=3000))
def test_random_bytes_exit_0_1_or_2(tmp_path: Path, data: bytes) -> None:
    assert_clean_exit(*lint_file(tmp_path / "fuzz.service", data, "--no-shellcheck"))


@FUZZ
@given(data=UNITS)
def test_unit_like_bytes_with_hostile_values_exit_0_1_or_2(tmp_path: Path, data: bytes) -> None:
    assert_clean_exit(*lint_file(tmp_path / "fuzz.service", data, "--no-shellcheck"))


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=UNITS)
def test_unit_like_bytes_with_shellcheck_and_json_output_exit_0_1_or_2(
    tmp_path: Path, data: bytes
) -> None:
    assert_clean_exit(*lint_file(tmp_path / "fuzz.service", data, "--format", "json"))


@settings(max_examples=8, deadline=None)
@given(data=UNITS)
def test_the_command_on_bytes_from_standard_input_exits_0_1_or_2(data: bytes) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "linting", "--no-shellcheck", "-"],
        input=data,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert_clean_exit(done.returncode, done.stderr.decode(errors="replace"))
