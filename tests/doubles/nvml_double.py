"""TEST DOUBLE for the NVML bindings (`pynvml`, package nvidia-ml-py): the subset specadmin's
LocalTransport calls, answering from the same gpu_state registrations as the nvidia-smi
double, so both transports see one truth on a test host.

Shapes follow pynvml 12/13: names and UUIDs are `str`, memory in bytes (`.total`, `.used`,
`.free`), processes are objects with `.pid` and `.usedGpuMemory` (bytes; None when N/A),
errors are `NVMLError` with `.value`. Never used by product code.
"""

from __future__ import annotations

from dataclasses import dataclass

try:  # installed in a test host as package `doubles`; in the checkout as `tests.doubles`
    from . import gpu_state
except ImportError:  # pragma: no cover - run as a plain script
    import gpu_state  # type: ignore[no-redef]

MIB = 1024 * 1024
nvmlMemory_v2 = 0x02000028
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12

_MESSAGES = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
}


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        self.value = value
        super().__init__(value)

    def __str__(self) -> str:
        return _MESSAGES.get(self.value, f"NVML error {self.value}")


@dataclass(frozen=True)
class Memory:
    total: int
    used: int
    free: int
    reserved: int = 0  # v2 only; the double reserves nothing, so v1 and v2 agree


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    usedGpuMemory: int | None


class NvmlDouble:
    """Pass an instance where LocalTransport accepts an `nvml` module.

    `init_error`: make nvmlInit fail like a host without a driver (e.g. 9 or 12).
    """

    NVMLError = NVMLError
    nvmlMemory_v2 = nvmlMemory_v2

    def __init__(
        self, config: gpu_state.GpuConfig | None = None, *, init_error: int | None = None
    ) -> None:
        self.config = config
        self.init_error = init_error
        self.initialised = 0
        self.calls: list[str] = []

    def _cfg(self) -> gpu_state.GpuConfig:
        if not self.initialised:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)
        return self.config or gpu_state.load_config()

    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self.calls.append("nvmlShutdown")
        if not self.initialised:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)
        self.initialised -= 1

    def nvmlDeviceGetCount(self) -> int:
        return self._cfg().gpu_count

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        if not 0 <= index < self._cfg().gpu_count:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return index

    def nvmlDeviceGetName(self, handle: int) -> str:
        return self._cfg().name

    def nvmlDeviceGetUUID(self, handle: int) -> str:
        return self._cfg().uuid(handle)

    def nvmlDeviceGetMemoryInfo(self, handle: int, version: int | None = None) -> Memory:
        self.calls.append(f"nvmlDeviceGetMemoryInfo(version={version})")
        cfg = self._cfg()
        used = gpu_state.used_mib(cfg)[handle] * MIB
        total = cfg.memory_total_mib * MIB
        return Memory(total=total, used=used, free=total - used)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[ProcessInfo]:
        return [
            ProcessInfo(pid=r.pid, usedGpuMemory=r.mib * MIB)
            for r in gpu_state.live_registrations(self._cfg())
            if r.gpu == handle
        ]

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        self._cfg()
        return gpu_state.process_name(pid)
