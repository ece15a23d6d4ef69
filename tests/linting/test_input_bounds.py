"""Hostile input to the linter: deeply nested JSON in vLLM's JSON flags.

Python's `json.loads` gives up with RecursionError on ~1,000 levels of nesting; lintunits
must report that as the invalid value it is (vLLM's own `json.loads` would fail the same
way), never as an internal error.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from linting.cli import run

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a":' * 100_000 + "1" + "}" * 100_000


def _lint(tmp_path: Path, exec_start: str) -> tuple[int, str, str]:
    unit = tmp_path / "vllm.service"
    unit.write_text(f"[Service]\nType=exec\nExecStart={exec_start}\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    code = run([str(unit), "--no-shellcheck"], out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("flag", ["--compilation-config", "--speculative-config"])
@pytest.mark.parametrize("value", [DEEP, DEEP_OBJECT], ids=["array", "object"])
def test_json_nested_100k_deep_is_a_finding_not_an_internal_error(
    tmp_path: Path, flag: str, value: str
) -> None:
    code, out, err = _lint(tmp_path, f"/opt/vllm/bin/vllm serve /models/m {flag} '{value}'")
    assert "internal error" not in err
    assert code == 1, (out[-500:], err[-500:])
    assert "nested too deeply" in out


def test_json_nested_deep_in_a_dotted_key_is_not_an_internal_error(tmp_path: Path) -> None:
    code, _out, err = _lint(
        tmp_path, f"/opt/vllm/bin/vllm serve /models/m --speculative-config.method '{DEEP}'"
    )
    assert "internal error" not in err
    assert code in (0, 1)


HUGE = "9" * 5000  # past Python's 4,300-digit int conversion limit


@pytest.mark.parametrize(
    "argument",
    [
        f"--max-model-len {HUGE}k",  # vLLM's int(float(…) * 1000) overflows
        f"--max-model-len {'9' * 400}.5k",
        f"--max-model-len {HUGE}",
        f"--speculative-config.num_speculative_tokens {HUGE}",  # json.loads of the value
        f"--compilation-config '{{\"level\": {HUGE}}}'",
        f"--tensor-parallel-size {HUGE}",
        "--gpu-memory-utilization 1E+1000000",
    ],
    ids=lambda a: a[:40],
)
def test_numbers_past_pythons_limits_are_findings_not_internal_errors(
    tmp_path: Path, argument: str
) -> None:
    code, out, err = _lint(tmp_path, f"/opt/vllm/bin/vllm serve /models/m {argument}")
    assert "internal error" not in err
    assert code == 1, (out[-500:], err[-500:])


def test_a_5000_character_vllm_version_is_a_usage_error(tmp_path: Path) -> None:
    unit = tmp_path / "vllm.service"
    unit.write_text("[Service]\nExecStart=/opt/vllm/bin/vllm serve /m\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    code = run([str(unit), "--vllm-version", "9" * 5000], out, err)
    assert code == 2
    assert "no vLLM catalog for version" in err.getvalue()
