"""Host operations: what specadmin does on a GPU host, without Django.

`hostops.channel` is how commands and files reach a host (SSH with its key trust, local,
port forwards, command records, output bounds, the verified unit push); beside it, what to
do on a systemd host running vLLM: GPU attribution and cleaning (`gpu_clean`, `gpu_free`),
processes, the journal, the vLLM check (`vllm_check`, `run_as`, `service`) and the
executables check. Jobs (`deploys.jobs`) and the probes call these; so can anything else
that needs the host between jobs. docs/architecture.md, "Apps and imports".
"""
