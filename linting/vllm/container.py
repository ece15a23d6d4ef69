"""`docker run` / `podman run` lines that start the vLLM image: the image (and so the vLLM
release, from its tag), the GPUs the container gets, and the vLLM arguments after the
image, which the image's ENTRYPOINT receives (`python3 -m vllm.entrypoints.openai.api_server`
up to 0.11.1, `vllm serve` from 0.11.2; read from each release's docker/Dockerfile)."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from linting.spans import Traced

# Options of `docker run` / `podman run` that take a value (docker-run(1), podman-run(1));
# every other `-x`/`--xy` is a flag. `--opt=value` is one word either way.
_WITH_VALUE = frozenset(
    [
        "-a",
        "--attach",
        "--add-host",
        "--annotation",
        "--arch",
        "--blkio-weight",
        "--blkio-weight-device",
        "--cap-add",
        "--cap-drop",
        "--cgroup-parent",
        "--cgroupns",
        "--cgroups",
        "--chrootdirs",
        "--cidfile",
        "--conmon-pidfile",
        "-c",
        "--cpu-shares",
        "--cpu-period",
        "--cpu-quota",
        "--cpu-rt-period",
        "--cpu-rt-runtime",
        "--cpus",
        "--cpuset-cpus",
        "--cpuset-mems",
        "--decryption-key",
        "--device",
        "--device-cgroup-rule",
        "--device-read-bps",
        "--device-read-iops",
        "--device-write-bps",
        "--device-write-iops",
        "--dns",
        "--dns-option",
        "--dns-opt",
        "--dns-search",
        "--domainname",
        "-e",
        "--env",
        "--env-file",
        "--entrypoint",
        "--expose",
        "--gidmap",
        "--gpus",
        "--group-add",
        "--group-entry",
        "--health-cmd",
        "--health-interval",
        "--health-on-failure",
        "--health-retries",
        "--health-start-period",
        "--health-startup-cmd",
        "--health-startup-interval",
        "--health-startup-retries",
        "--health-startup-success",
        "--health-startup-timeout",
        "--health-timeout",
        "-h",
        "--hostname",
        "--hooks-dir",
        "--hostuser",
        "--image-volume",
        "--init-path",
        "--ip",
        "--ip6",
        "--ipc",
        "--isolation",
        "--kernel-memory",
        "-l",
        "--label",
        "--label-file",
        "--link",
        "--link-local-ip",
        "--log-driver",
        "--log-opt",
        "--mac-address",
        "-m",
        "--memory",
        "--memory-reservation",
        "--memory-swap",
        "--memory-swappiness",
        "--mount",
        "--name",
        "--network",
        "--net",
        "--network-alias",
        "--oom-score-adj",
        "--os",
        "--passwd-entry",
        "--personality",
        "--pid",
        "--pidfile",
        "--pids-limit",
        "--platform",
        "--pod",
        "--pod-id-file",
        "--preserve-fds",
        "-p",
        "--publish",
        "--pull",
        "--rdt-class",
        "--requires",
        "--restart",
        "--runtime",
        "--sdnotify",
        "--seccomp-policy",
        "--secret",
        "--security-opt",
        "--shm-size",
        "--shm-size-systemd",
        "--stop-signal",
        "--stop-timeout",
        "--storage-opt",
        "--subgidname",
        "--subuidname",
        "--sysctl",
        "--systemd",
        "--timeout",
        "--tmpfs",
        "--tz",
        "--uidmap",
        "--ulimit",
        "--umask",
        "-u",
        "--user",
        "--userns",
        "--uts",
        "--variant",
        "-v",
        "--volume",
        "--volume-driver",
        "--volumes-from",
        "-w",
        "--workdir",
    ]
)
_GPU_DEVICE = re.compile(r"nvidia\.com/gpu=(.+)")
# Images of vLLM: the official ones and the common mirrors/derivatives of them.
_VLLM_IMAGE = re.compile(r"(^|/)vllm[-_\w]*(:|@|$)", re.I)
ALL = -1  # a GPU count meaning "every GPU of the host"


@dataclass(frozen=True)
class ContainerRun:
    engine: str  # docker | podman
    image: Traced
    image_index: int  # in the argv given to parse_container_run
    entrypoint: tuple[str, ...] | None  # --entrypoint, split on blanks
    gpus: int | None  # None: no GPU option; ALL: every GPU; else a count
    gpu_option: Traced | None  # where the GPUs are given, for findings
    detached: bool

    @property
    def args(self) -> slice:
        """The words after the image: the entrypoint's arguments."""
        return slice(self.image_index + 1, None)


def parse_container_run(argv: list[Traced]) -> ContainerRun | None:
    """`docker|podman [GLOBAL…] run [OPTIONS] IMAGE [ARGS]` with a vLLM image, else None."""
    found = container_run(argv)
    if found is None or not _VLLM_IMAGE.search(argv[found.image_index].text):
        return None
    return found


def container_run(argv: list[Traced]) -> ContainerRun | None:
    """`docker|podman … run [OPTIONS] IMAGE [ARGS]` of any image, else None."""
    engine = posixpath.basename(argv[0].text) if argv else ""
    if engine not in ("docker", "podman") or "run" not in [a.text for a in argv[1:4]]:
        return None
    i = [a.text for a in argv].index("run") + 1
    state = _Options()
    while i < len(argv):
        word = argv[i].text
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        i = state.take(argv, i)
    if i >= len(argv):
        return None
    return ContainerRun(
        engine,
        argv[i],
        i,
        state.entrypoint,
        state.gpus,
        state.gpu_option,
        state.detached,
    )


class _Options:
    """What the options before the image say about GPUs, the entrypoint and -d."""

    def __init__(self) -> None:
        self.entrypoint: tuple[str, ...] | None = None
        self.gpus: int | None = None
        self.gpu_option: Traced | None = None
        self.detached = False
        self._devices = 0

    def take(self, argv: list[Traced], i: int) -> int:
        """Read the option at argv[i] (and its value); returns the next index."""
        word = argv[i].text
        name, eq, inline = word.partition("=")
        if eq and name.startswith("--"):
            self._value(name, argv[i], inline)
            return i + 1
        if word in _WITH_VALUE:
            if i + 1 < len(argv):
                self._value(word, argv[i + 1], argv[i + 1].text)
            return i + 2
        if word.startswith("-") and not word.startswith("--") and len(word) > 2:
            # bundled short flags (`-dit`), or a short option with its value (`-p8000:8000`)
            if f"-{word[1]}" in _WITH_VALUE:
                self._value(f"-{word[1]}", argv[i], word[2:])
                return i + 1
            self.detached = self.detached or "d" in word[1:]
        elif word in ("-d", "--detach"):
            self.detached = True
        return i + 1

    def _value(self, name: str, where: Traced, value: str) -> None:
        if name == "--entrypoint":
            self.entrypoint = tuple(value.split())
        elif name == "--gpus":
            self.gpus, self.gpu_option = _docker_gpus(value), where
        elif name == "--device" and _GPU_DEVICE.match(value):
            which = _GPU_DEVICE.match(value).group(1)  # type: ignore[union-attr]
            if which == "all":
                self.gpus = ALL
            elif self.gpus != ALL:
                self._devices += len([d for d in which.split(",") if d])
                self.gpus = self._devices
            self.gpu_option = where
        elif name == "--detach":
            self.detached = value.lower() not in ("false", "0")
        elif name in ("-e", "--env") and value.startswith("NVIDIA_VISIBLE_DEVICES="):
            devices = value.partition("=")[2]
            self.gpus = ALL if devices == "all" else len([d for d in devices.split(",") if d])
            self.gpu_option = where


def _docker_gpus(value: str) -> int:
    """`--gpus all`, `--gpus 2`, `--gpus '"device=0,1"'` (docker-run(1))."""
    value = value.strip().strip("'\"")
    if value == "all":
        return ALL
    if value.isdigit():
        return int(value)
    match = re.search(r"device=([\w,-]+)", value)
    if match:
        return len([d for d in match.group(1).split(",") if d])
    match = re.search(r"count=(\w+)", value)
    if match:
        return ALL if match.group(1) == "all" else int(match.group(1) or 0)
    return ALL
