"""The vLLM servers a unit starts, however it starts them: an Exec command that runs
`vllm serve` or an api_server module (behind launchers such as `env -i`, `nohup`,
`numactl … --`), a `docker|podman run` of the vLLM image (the vLLM arguments follow the
image, after its entrypoint or `--entrypoint`), a `bash -c '…'` script, or a wrapper script
(`ExecStart=/opt/llm/start.sh`) the linter can read, whose `exec vllm serve …` or
`docker run … vllm/vllm-openai …` it finds. Each is parsed against the catalog of the
release it runs (linting/vllm/version.py)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from linting.commands import Command
from linting.shell.invocation import find_shell_script
from linting.shell.wrapper import SHELLS, script_dialect, vllm_commands_in_script
from linting.spans import LineOrigins, Traced, joined_origins
from linting.unitfile import SourceFile
from linting.vllm.container import ContainerRun, parse_container_run
from linting.vllm.detect import find_vllm
from linting.vllm.invocation import VllmArgs, parse_vllm_command
from linting.vllm.launchers import launched
from linting.vllm.version import (
    VllmVersion,
    project_pin,
    resolve_version,
    version_in_image,
    version_in_path,
    version_in_text,
)

if TYPE_CHECKING:
    from linting.context import UnitContext

# Where the official image's entrypoint is not known (a wheel has no Dockerfile).
DEFAULT_ENTRYPOINT = ("vllm", "serve")
# Scripts that run scripts that run containers: followed this deep, no further.
_MAX_DEPTH = 3


@dataclass
class VllmCommand:
    """A vLLM server started by an Exec command, with its arguments parsed for the release
    it runs."""

    command: Command
    args: VllmArgs
    version: VllmVersion
    container: ContainerRun | None = None
    script: str | None = None  # the wrapper script that runs it (the linter's copy)

    @property
    def path(self) -> str:
        """The file its arguments are written in (the unit, a drop-in, the script)."""
        return self.script or self.command.assignment.path


@dataclass(frozen=True)
class WrapperScript:
    path: str  # the linter's copy
    dialect: str
    text: Traced  # the whole file, every character at its position


def find_servers(ctx: UnitContext) -> list[VllmCommand]:
    servers: list[VllmCommand] = []
    for cmd in ctx.commands:
        servers.extend(_in_words(ctx, cmd, [a.value for a in cmd.args], None, 0))
    return servers


def _in_words(
    ctx: UnitContext, cmd: Command, argv: list[Traced], script: str | None, depth: int
) -> list[VllmCommand]:
    """The servers one command line starts: itself, its container, or its script's."""
    texts = [a.text for a in argv]
    argv = argv[launched(texts) :]
    if not argv:
        return []
    run = parse_container_run(argv)
    if run is not None:
        return _container(ctx, cmd, argv, run, script, depth)
    if find_vllm(texts) is not None:
        return _direct(ctx, cmd, argv, script)
    if depth >= _MAX_DEPTH:
        return []
    inline = _inline_script(argv)
    if inline is not None:
        if not _may_start_vllm(inline.text):
            return []  # no vLLM command or image in it: nothing to find
        return _scripted(ctx, cmd, inline, [], script or cmd.assignment.path, None, depth)
    found = _script_of(ctx, argv)
    if found is None:
        return []
    wrapper, script_args = found
    return _scripted(ctx, cmd, wrapper.text, script_args, wrapper.path, wrapper, depth)


def _scripted(
    ctx: UnitContext,
    cmd: Command,
    text: Traced,
    script_args: list[Traced],
    path: str,
    wrapper: WrapperScript | None,
    depth: int,
) -> list[VllmCommand]:
    """The servers the commands of a script start (a wrapper file, or a `-c` script)."""
    env = ctx.exec_environment(cmd.key)
    servers = []
    for command in vllm_commands_in_script(text, env, script_args, _starts_server):
        found = _in_words(ctx, cmd, command.argv, path if wrapper else None, depth + 1)
        if wrapper is not None:
            found = [replace(vc, script=wrapper.path) for vc in found]
        servers.extend(found)
    return servers


def _may_start_vllm(script: str) -> bool:
    """Can this script start a vLLM server at all? (`vllm serve`, `-m vllm.entrypoints…`,
    a vLLM image): checked before its words are read, as most scripts are GPU checks."""
    text = script.lower()
    return "vllm" in text and any(w in text for w in ("serve", "entrypoints", "docker", "podman"))


def _starts_server(words: list[str]) -> bool:
    """A script's command that may start vLLM: vLLM itself, a container, another shell."""
    start = launched(words)
    rest = words[start:]
    if not rest:
        return False
    name = posixpath.basename(rest[0])
    return find_vllm(rest) is not None or name in ("docker", "podman", *SHELLS)


def _inline_script(argv: list[Traced]) -> Traced | None:
    """The script of `bash|sh … -c SCRIPT`, with its file positions."""
    found = find_shell_script([a.text for a in argv])
    return argv[found.script_index] if found is not None else None


def wrapper_scripts(ctx: UnitContext) -> list[WrapperScript]:
    """The wrapper scripts the unit's commands run, where the linter can read them."""
    found = []
    for cmd in ctx.commands:
        script = _script_of(ctx, [a.value for a in cmd.args])
        if script is not None:
            found.append(script[0])
    return found


def _version(ctx: UnitContext, shown: tuple[str, str] | None) -> VllmVersion:
    options = ctx.options
    if shown is None:
        shown = _unit_pin(ctx)
    return resolve_version(
        explicit=options.vllm_version,
        shown=shown,
        configured=options.vllm_version_default,
        pinned=project_pin(ctx.unit.path, options.trees),
    )


def _unit_pin(ctx: UnitContext) -> tuple[str, str] | None:
    """A `vllm==X` an Exec line of the unit installs or runs (before assuming the newest)."""
    for cmd in ctx.commands:
        if "==" in cmd.assignment.value.text:
            release = version_in_text(" ".join(cmd.argv))
            if release:
                return (
                    release,
                    f"the pin vllm=={release} in {cmd.key}= (line {cmd.assignment.line})",
                )
    return None


def _direct(
    ctx: UnitContext, cmd: Command, argv: list[Traced], script: str | None
) -> list[VllmCommand]:
    release = version_in_path(argv[0].text)
    shown = (release, f"the path {argv[0].text}") if release else None
    if shown is None and script is not None:
        text = ctx.unit.sources[script].text if script in ctx.unit.sources else ""
        release = version_in_path(text)
        shown = (release, f"the script {script}") if release else None
    version = _version(ctx, shown)
    parsed = parse_vllm_command(argv, version.catalog)
    return [VllmCommand(cmd, parsed, version)] if parsed is not None else []


def _container(
    ctx: UnitContext,
    cmd: Command,
    argv: list[Traced],
    run: ContainerRun,
    script: str | None,
    depth: int,
) -> list[VllmCommand]:
    release = version_in_image(run.image.text)
    shown = (release, f"the image {run.image.text}") if release else None
    version = _version(ctx, shown)
    entrypoint = run.entrypoint or version.catalog.image_entrypoint or DEFAULT_ENTRYPOINT
    anchor = run.image.origins[0] if run.image.origins else None
    if not anchor:
        return []
    words = [Traced(w, (anchor,) * len(w)) for w in entrypoint] + argv[run.args]
    if find_vllm([w.text for w in words]) is None:
        # `--entrypoint /bin/bash … -c '…vllm serve…'`: the script the container runs
        inline = _inline_script(words) if depth < _MAX_DEPTH else None
        if inline is None:
            return []
        found = _scripted(ctx, cmd, inline, [], script or cmd.assignment.path, None, depth)
        return [replace(vc, container=run, version=version) for vc in found]
    parsed = parse_vllm_command(words, version.catalog)
    return [VllmCommand(cmd, parsed, version, container=run)] if parsed is not None else []


def _wrapped(ctx: UnitContext, cmd: Command, argv: list[Traced]) -> list[VllmCommand]:
    found = _script_of(ctx, argv)
    if found is None:
        return []
    script, script_args = found
    env = ctx.exec_environment(cmd.key)
    servers = []
    for command in vllm_commands_in_script(script.text.text, env, script_args):
        release = version_in_path(command.argv[0].text) or version_in_path(script.text.text)
        shown = (release, f"the script {script.path}") if release else None
        version = _version(ctx, shown)
        parsed = parse_vllm_command(command.argv, version.catalog)
        if parsed is not None:
            servers.append(VllmCommand(cmd, parsed, version, script=script.path))
    return servers


def _script_of(ctx: UnitContext, argv: list[Traced]) -> tuple[WrapperScript, list[Traced]] | None:
    """The script an Exec command runs (`/opt/x.sh ARGS` or `bash /opt/x.sh ARGS`), if
    the linter can read it, and the arguments the script receives."""
    if not argv:
        return None
    index = 0
    if posixpath.basename(argv[0].text) in ("bash", "sh", "dash", "ksh", "zsh"):
        if len(argv) < 2 or argv[1].text.startswith("-"):
            return None  # `sh -c …` (ShellCheck's) or options we do not follow
        index = 1
    host_path = argv[index].text
    if not host_path.startswith("/"):
        return None
    finder = ctx.options.file_finder
    read = finder.read(host_path, ctx.unit.path, starts_with=b"#!")
    if read is None and host_path.endswith(".sh"):
        read = finder.read(host_path, ctx.unit.path)
    if read is None:
        return None
    local, text = read
    dialect = script_dialect(text, host_path)
    if dialect is None:
        return None
    ctx.unit.sources.setdefault(local, SourceFile(local, text))
    return WrapperScript(local, dialect, _file_text(text)), argv[index + 1 :]


def _file_text(text: str) -> Traced:
    """A whole file as a Traced: each character at its line and column."""
    lines = text.split("\n")
    pieces = []
    for number, line in enumerate(lines, start=1):
        pieces.append(LineOrigins(number, 1, len(line) + (1 if number < len(lines) else 0)))
    return Traced(text, joined_origins(pieces))
