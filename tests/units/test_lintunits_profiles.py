"""`manage.py lintunits --profiles` lints stored profiles with the file linter's formats
and exit codes."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from linting.management.commands.lintunits import Command

pytestmark = pytest.mark.django_db


def run(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        Command().run_from_argv(["manage.py", "lintunits", *args])
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


def test_all_demo_profiles_lint_clean(capsys: pytest.CaptureFixture[str]) -> None:
    call_command("loaddemo")
    capsys.readouterr()
    code, out, _ = run("--profiles", "--format", "json", capsys=capsys)
    report = json.loads(out)
    assert code == 0
    paths = sorted(f["path"] for f in report["files"])
    assert paths == ["profile:vllm-kimi-k25-int4-ngram@v2", "profile:vllm-kimi-k25-int4@v1"]
    ngram = next(f for f in report["files"] if "ngram" in f["path"])
    argv = next(c["argv"] for c in ngram["commands"] if c["key"] == "ExecStart")
    assert argv[argv.index("--speculative-config") + 1] == (
        '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}'
    )


def test_unknown_profile_is_an_input_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run("--profiles", "no-such-profile", capsys=capsys)
    assert code == 2
    assert "profile:no-such-profile" in out and "no such profile" in out


def test_fix_is_refused_for_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run("--profiles", "--fix", capsys=capsys)
    assert code == 2 and "--fix/--diff work on files" in err
