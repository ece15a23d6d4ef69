"""What one lint run is asked to model: target versions, rule selection, ShellCheck on or
off. Imported by the engine, the command line and the apps that lint rendered units (the
profile form, the deploy steps), so it depends on nothing but the version catalogs."""

from __future__ import annotations

from dataclasses import dataclass

from linting.execline.specifiers import HostFacts
from linting.findings import Severity
from linting.local_files import FileFinder
from linting.systemd.catalog import DEFAULT_SYSTEMD_VERSION


@dataclass
class LintOptions:
    systemd_version: int | None = None
    # The vLLM release to lint every command as (`--vllm-version`, a profile's target);
    # `vllm_version_default` only for commands that show none (`[tool.lintunits]`).
    vllm_version: str | None = None
    vllm_version_default: str | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: Severity = Severity.ERROR
    shellcheck: bool = True
    # Rules in preview (linting/rules/codes.py) run too; else only when --select names one.
    preview: bool = False
    host_facts: HostFacts | None = None
    # Local copies of files units name on their host: HOST_PATH -> LOCAL_PATH
    # (`--env-file`), directories that mirror the host's `/` (`--script-root`), and the
    # directories lintunits was given, searched for such files (linting/local_files.py).
    env_files: tuple[tuple[str, str], ...] = ()
    script_roots: tuple[str, ...] = ()
    trees: tuple[str, ...] = ()
    # Units that run on one machine (`--same-host`), beside those of one directory.
    same_host: tuple[tuple[str, ...], ...] = ()
    # Units run by a user's own manager (`--user-unit`; `*` is every unit), beside those
    # the linter recognises itself (linting/user_units.py).
    user_units: tuple[str, ...] = ()

    @property
    def file_finder(self) -> FileFinder:
        return FileFinder(dict(self.env_files), self.script_roots, self.trees)

    @property
    def effective_systemd_version(self) -> int:
        return self.systemd_version or DEFAULT_SYSTEMD_VERSION
