"""The unit import against real systemd: for a sample of the corpus, the original unit
and the one rendered from its imported profile run under a real systemd (tests/testhost)
with the program replaced by the argv dumper, and the argv systemd passes is compared
byte for byte. Both texts get the same changes so that they can run there (no other
commands, `User=nobody`, optional files and directories, `Type=oneshot`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.differential import harness
from tests.differential.corpus import UNIT_DIR
from tests.differential.dumper import DUMPER, OUT_DIR, build_dumper, install_into, parse_records
from tests.testhost.host import TestHost
from units.importing.service import import_unit

pytestmark = [pytest.mark.testhost, pytest.mark.django_db]

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = [
    "tests/linting/realworld/ansible-vllm/files/vllm.service",
    "tests/linting/realworld/ansible-vllm/templates/vllm-secrets.service",
    "tests/linting/realworld/templates-misc/vllm-instance.service",
    "tests/linting/realworld/templates-misc/vllm-home.service",
    "tests/linting/realworld/venv-versions/vllm-085.service",
    "tests/linting/realworld/env-pyproject/deploy/vllm.service",
    "tests/linting/realworld/alternatives/vllm-fp8.service",
    "examples/vllm-kimi-k25-int4-ngram.service",
]
_OTHER_EXEC = re.compile(r"Exec(StartPre|StartPost|Stop|StopPost|Reload|Condition)=")


def _logical_lines(text: str) -> list[str]:
    lines, current = [], ""
    for line in text.splitlines():
        current += line
        if line.endswith("\\"):
            current += "\n"
            continue
        lines.append(current)
        current = ""
    return lines + ([current] if current else [])


def runnable(text: str) -> str:
    """The unit, changed only where it could not run on the test host; ExecStart= runs
    the dumper with the same arguments."""
    out: list[str] = []
    for line in _logical_lines(text):
        if _OTHER_EXEC.match(line) or line.startswith("Group="):
            continue
        if line.startswith("ExecStart="):
            line = re.sub(r"^ExecStart=(\S+)", f"ExecStart={DUMPER}", line)
        line = re.sub(r"^User=.*", "User=nobody", line)
        line = re.sub(r"^(EnvironmentFile|WorkingDirectory)=(?!-)", r"\1=-", line)
        line = re.sub(r"^Restart=.*", "Restart=no", line)
        if line.startswith("[") and out and "[Service]" in out:
            out.append("Type=oneshot")
        out.append(line)
    if "Type=oneshot" not in out:
        out.append("Type=oneshot")
    return "\n".join(out) + "\n"


def _run(host: TestHost, texts: list[str]) -> dict[str, list[tuple[bytes, ...]]]:
    host.nsenter(["sh", "-c", f"rm -rf {OUT_DIR} && mkdir -m 1777 {OUT_DIR}"], check=True)
    unit_dir = host.root / UNIT_DIR.lstrip("/")
    names = [f"impdiff-{i:02d}.service" for i in range(len(texts))]
    for name, text in zip(names, texts, strict=True):
        (unit_dir / name).write_text(text, encoding="utf-8")
    host.systemctl("daemon-reload", check=True)
    host.nsenter(["systemctl", "start", "--", *names], timeout=120)
    dumps = harness._read_dumps(host)
    for name in names:
        (unit_dir / name).unlink()
    return {name: parse_records(dumps.get(name, b"")) for name in names}


def test_imported_units_give_the_program_the_same_argv_under_real_systemd(
    testhost: TestHost,
) -> None:
    build_dumper()
    install_into(testhost.root)
    originals, rendered = [], []
    for i, relative in enumerate(SAMPLE):
        path = ROOT / relative  # two are vllm.service: each its own profile name
        text = path.read_text(encoding="utf-8")
        result = import_unit(text=text, filename=f"s{i}-{path.name}", actor=None)
        originals.append(runnable(text))
        rendered.append(runnable(result.version.unit_text))
    before, after = _run(testhost, originals), _run(testhost, rendered)
    ran = [name for name, records in before.items() if records]
    assert len(ran) == len(SAMPLE), f"did not run: {set(before) - set(ran)}"
    assert before == after
