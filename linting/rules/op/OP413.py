from __future__ import annotations

import re
from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.op._scripts import program, simple_commands
from linting.rules.registry import rule

# Programs that fetch model weights, and the subcommand that does (None: any use).
_DOWNLOADERS: dict[str, tuple[str, ...] | None] = {
    "huggingface-cli": ("download",),
    "hf": ("download",),
    "azcopy": ("copy", "cp", "sync"),
    "aws": ("cp", "sync"),
    "gsutil": ("cp", "rsync"),
    "gcloud": ("cp", "rsync"),
    "rclone": ("copy", "sync", "copyto"),
    "s5cmd": ("cp", "sync"),
    "modelscope": ("download",),
}
# curl/wget only when what they fetch is weights, not a health check.
_WEIGHTS = re.compile(r"huggingface\.co|hf\.co/|/resolve/|\.safetensors|\.gguf|\.bin\b|\.pth?\b")
_PYTHON_DOWNLOAD = re.compile(r"snapshot_download|hf_hub_download")
# A line that names none of these downloads nothing (checked before splitting its script).
_MAY_DOWNLOAD = re.compile(
    r"curl|wget|_download|\blfs\b|huggingface-cli|\bhf\b|azcopy|\baws\b|gsutil|gcloud|rclone"
    r"|s5cmd|modelscope"
)


@rule("OP413", Severity.WARNING)
def download_under_start_timeout(ctx: UnitContext) -> Iterator[Hit]:
    """
    An `ExecStartPre=` that downloads model weights under the default start timeout.

    What it does:
    Reports `ExecStartPre=` commands (or commands of their scripts) that fetch weights:
    `huggingface-cli download`, `hf download`, `azcopy copy`, `aws s3 cp`, `gsutil cp`,
    `rclone copy`, `snapshot_download(…)`, `curl`/`wget` of a Hugging Face or weights URL,
    in a vLLM unit that leaves `TimeoutStartSec=` (and `TimeoutSec=`) at the default.

    Why is this bad?
    `TimeoutStartSec=` bounds each `ExecStartPre=` command (docs/architecture.md, fact 6):
    90 s by default (DefaultTimeoutStartSec=). Weights are gigabytes; the download is
    killed half way, the start fails, and `Restart=` starts it again from the beginning.

    Example:
    ```ini
    ExecStartPre=/usr/local/bin/huggingface-cli download Qwen/Qwen2.5-7B-Instruct --local-dir /models/qwen
    ExecStart=/opt/vllm/bin/vllm serve /models/qwen
    ```

    Use instead:
    ```ini
    TimeoutStartSec=1h
    ExecStartPre=/usr/local/bin/huggingface-cli download Qwen/Qwen2.5-7B-Instruct --local-dir /models/qwen
    ExecStart=/opt/vllm/bin/vllm serve /models/qwen
    ```
    (or download in a separate oneshot unit that the server `Requires=`).
    """
    if not ctx.vllm_servers:
        return
    if any(ctx.unit.get_all("Service", key) for key in ("TimeoutStartSec", "TimeoutSec")):
        return
    for cmd in ctx.commands:
        if cmd.key != "ExecStartPre" or not _MAY_DOWNLOAD.search(cmd.assignment.value.text):
            continue
        for simple in simple_commands(cmd):
            what = _download(simple.words)
            if what is None:
                continue
            yield Hit(
                cmd.assignment.value.span(),
                f"`{what}` downloads model weights in ExecStartPre=, which the default "
                "TimeoutStartSec= (90 s) bounds: systemd kills a download of gigabytes half "
                "way and the start fails; set TimeoutStartSec= to cover it",
                path=cmd.assignment.path,
            )
            break


def _download(words: list[str]) -> str | None:
    name = program(words)
    text = " ".join(words)
    if name in _DOWNLOADERS:
        subcommands = _DOWNLOADERS[name]
        if subcommands is None or any(w in subcommands for w in words[1:4]):
            return " ".join(words[:3])
        return None
    if name in ("curl", "wget") and _WEIGHTS.search(text):
        return name
    if name.startswith("python") and _PYTHON_DOWNLOAD.search(text):
        return name + " … snapshot_download"
    if name == "git" and "lfs" in words[1:3]:
        return "git lfs"
    return None
