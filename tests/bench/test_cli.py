"""`python -m servebench`: table, --json, exit codes, import and the gate."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from servebench.cli import main
from tests.bench.conftest import REPO, StartDouble

FIXTURES = Path(__file__).parent / "fixtures"
ARGS = ["--requests", "4", "--concurrency", "1,2", "--max-tokens", "12", "--quiet"]


def test_the_cli_prints_a_table_with_one_row_per_level(
    vllm_double: StartDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    url = vllm_double("--ttft-ms", "20", "--tokens-per-s", "300")
    assert main([url, *ARGS]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("servebench · model m")
    assert "out tok/s" in lines[1] and "TPOT p50" in lines[1]
    assert [line.split()[0] for line in lines[2:4]] == ["1", "2"]
    assert "INCOMPLETE" not in out


def test_json_output_reads_back_as_a_result_and_serves_as_a_baseline(
    vllm_double: StartDouble, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fast = vllm_double("--ttft-ms", "20", "--tokens-per-s", "300")
    assert main([fast, *ARGS, "--json", "--output", str(tmp_path / "base.json")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [lv["concurrency"] for lv in data["levels"]] == [1, 2]
    assert data["settings"]["max_tokens"] == 12
    slow = vllm_double("--ttft-ms", "20", "--tokens-per-s", "200")
    code = main([slow, *ARGS, "--baseline", str(tmp_path / "base.json")])
    out = capsys.readouterr().out
    assert code == 3
    assert "gate: REGRESSED (threshold 5%)" in out
    assert "Output tokens/s at 1 stream down" in out


def test_an_incomplete_run_exits_1_and_says_so(
    vllm_double: StartDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    url = vllm_double(
        "--ttft-ms",
        "20",
        "--tokens-per-s",
        "300",
        "--stream-fault",
        "no_usage",
        "--stream-fault-after",
        "3",
    )
    assert main([url, *ARGS]) == 1
    out = capsys.readouterr().out
    assert "request(s) failed: no usage block" in out
    assert "INCOMPLETE" in out


def test_errors_exit_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["http://127.0.0.1:9", *ARGS]) == 2
    err = capsys.readouterr().err
    assert err.startswith("servebench: error: cannot connect to the server")
    assert "Traceback" not in err


def test_a_vllm_result_is_imported_and_printed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--import-vllm", str(FIXTURES / "vllm_bench_serve_result.json")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("vllm-bench-serve · model Qwen/Qwen3-8B")
    assert "40.0%" in out


def test_the_package_runs_with_python_dash_m_and_imports_no_django() -> None:
    code = (
        "import sys, runpy; sys.argv = ['servebench', '--help'];\n"
        "try:\n    runpy.run_module('servebench', run_name='__main__')\n"
        "except SystemExit: pass\n"
        "assert not [m for m in sys.modules if m.startswith('django')], 'django imported'\n"
        "print('ok')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert out.rstrip().endswith("ok")
    assert "usage: python -m servebench" in out


def test_servebench_imports_only_the_standard_library_and_aiohttp() -> None:
    """It must run unchanged on a GPU machine without any of specadmin's dependencies."""
    allowed = set(sys.stdlib_module_names) | {"aiohttp", "servebench"}
    found = set()
    for path in (REPO / "servebench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    assert found - allowed == set()
    assert "aiohttp" in found
