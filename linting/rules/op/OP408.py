from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.systemd.values import parse_boolean

# /proc/devices names of the NVIDIA character devices: `nvidia-frontend` (major 195:
# /dev/nvidiaN and /dev/nvidiactl) and `nvidia-uvm` (/dev/nvidia-uvm, /dev/nvidia-uvm-tools).
_FRONTEND = "char-nvidia-frontend"
_UVM = "char-nvidia-uvm"
_GPU_DEVICE = re.compile(r"/dev/nvidia\d+")


@rule("OP408", Severity.ERROR)
def gpu_hidden_by_sandboxing(ctx: UnitContext) -> Iterator[Hit]:
    """
    Sandboxing that takes the GPUs away from a vLLM server.

    What it does:
    For units that run vLLM: `PrivateDevices=yes`, and `DevicePolicy=closed` or `strict`
    without `DeviceAllow=` for every NVIDIA device CUDA opens (`/dev/nvidiactl`,
    `/dev/nvidia-uvm` and the GPUs `/dev/nvidiaN`, or the groups `char-nvidia-frontend` and
    `char-nvidia-uvm`).

    Why is this bad?
    `PrivateDevices=yes` gives the service a private `/dev` with only pseudo devices
    (measured on 252: no `/dev/nvidia*` inside); `DevicePolicy=closed` allows only the
    standard pseudo devices plus `DeviceAllow=`, `strict` only `DeviceAllow=`
    (systemd.resource-control(5)). vLLM then finds no CUDA device and exits at start-up.

    Example:
    ```ini
    PrivateDevices=yes
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    DevicePolicy=closed
    DeviceAllow=char-nvidia-frontend rw
    DeviceAllow=char-nvidia-uvm rw
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    """
    if not ctx.vllm_servers:
        return
    private = ctx.unit.last("Service", "PrivateDevices")
    if private is not None and parse_boolean(private.value.text):
        yield Hit(
            private.value.span(),
            "PrivateDevices=yes gives vLLM a /dev without /dev/nvidia*: it finds no GPU and "
            "exits at start-up; drop it (DevicePolicy=closed with DeviceAllow= for the NVIDIA "
            "devices still limits device access)",
            path=private.path,
        )
    policy = ctx.unit.last("Service", "DevicePolicy")
    if policy is None or policy.value.text not in ("closed", "strict"):
        return
    missing = _missing_devices(ctx)
    if missing:
        yield Hit(
            policy.value.span(),
            f"DevicePolicy={policy.value.text} without DeviceAllow= for {', '.join(missing)}: "
            "CUDA cannot open them and vLLM exits at start-up; add "
            f"DeviceAllow={_FRONTEND} rw and DeviceAllow={_UVM} rw",
            path=policy.path,
        )


def _missing_devices(ctx: UnitContext) -> list[str]:
    allowed = [a.value.text.split()[0] for a in ctx.unit.effective_list("Service", "DeviceAllow")]

    def covered(device: str, group: str) -> bool:
        return any(fnmatch.fnmatchcase(device, p) or fnmatch.fnmatchcase(group, p) for p in allowed)

    missing = [
        device
        for device, group in (("/dev/nvidiactl", _FRONTEND), ("/dev/nvidia-uvm", _UVM))
        if not covered(device, group)
    ]
    if not any(_GPU_DEVICE.fullmatch(p) for p in allowed) and not covered(
        "/dev/nvidia0", _FRONTEND
    ):
        missing.append("the GPUs (/dev/nvidiaN)")
    return missing
