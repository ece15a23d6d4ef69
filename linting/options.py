"""What one lint run is asked to model: target versions, rule selection, ShellCheck on or
off. Imported by the engine, the command line and the apps that lint rendered units (the
profile form, the deploy steps), so it depends on nothing but the version catalogs."""

from __future__ import annotations

from dataclasses import dataclass

from linting.execline.specifiers import HostFacts
from linting.findings import Severity
from linting.systemd.catalog import DEFAULT_SYSTEMD_VERSION
from linting.vllm.catalog import DEFAULT_VLLM_VERSION


@dataclass
class LintOptions:
    systemd_version: int | None = None
    vllm_version: str | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: Severity = Severity.ERROR
    shellcheck: bool = True
    host_facts: HostFacts | None = None

    @property
    def effective_systemd_version(self) -> int:
        return self.systemd_version or DEFAULT_SYSTEMD_VERSION

    @property
    def effective_vllm_version(self) -> str:
        return self.vllm_version or DEFAULT_VLLM_VERSION
