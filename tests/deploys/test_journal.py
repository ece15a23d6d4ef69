"""Reading a starting service's journal and unit state (hostops.journal), and finding
its vLLM server in the unit's argv (hostops.service): no host needed."""

from __future__ import annotations

import pytest

from hostops.journal import classify, last_progress, unit_verdict
from hostops.service import vllm_service
from linting.report import CommandInfo

SPEC_TRACEBACK = [
    "INFO 11-30 21:30:21 [api_server.py:1885] vLLM API server version 0.16.0",
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/vllm", line 8, in <module>',
    "    sys.exit(main())",
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig",
    "method",
    "  Input should be 'ngram' or 'eagle' [type=literal_error, input_value='suffx']",
]


def test_a_traceback_is_named_by_the_known_error_it_raised() -> None:
    fatal = classify(SPEC_TRACEBACK)
    assert fatal is not None and fatal.kind == "speculative-config error"
    assert fatal.summary.startswith("speculative-config error: pydantic_core._pydantic_core.")
    assert fatal.lines[0] == "Traceback (most recent call last):"
    assert fatal.lines[-1].startswith("  Input should be")


def test_an_unknown_traceback_is_named_by_its_last_line() -> None:
    fatal = classify(["Traceback (most recent call last):", "  x", "KeyError: 'rope_theta'"])
    assert fatal is not None and fatal.kind == "Python traceback"
    assert fatal.summary == "Python traceback: KeyError: 'rope_theta'"


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (
            "vllm-a.service: Failed to execute /opt/vllm/bin/vllm: No such file",
            "systemd exec error",
        ),
        ("vllm-a.service: Main process exited, code=exited, status=203/EXEC", "systemd exec error"),
        (
            "vllm-a.service: Referenced but unset environment variable evaluates to an empty "
            "string: MODEL_DIR",
            "unset environment variable",
        ),
        ("vllm: error: unrecognized arguments: --speculative-model x", "vLLM argument error"),
        ("vllm serve: error: argument --port: invalid int value: 'x'", "vLLM argument error"),
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            "CUDA out of memory",
        ),
        (
            "ValueError: Free memory on device cuda:0 (1.1/140.4 GiB) on startup is less than "
            "desired GPU memory utilization",
            "CUDA out of memory",
        ),
        (
            "RuntimeError: Engine core initialization failed. See root cause above.",
            "engine failure",
        ),
    ],
)
def test_fatal_lines_are_recognised(line: str, kind: str) -> None:
    fatal = classify(["INFO starting", line])
    assert fatal is not None and fatal.kind == kind


def test_progress_and_harmless_lines_are_not_fatal() -> None:
    lines = [
        "INFO [gpu_model_runner.py:2000] Loading model /models/k on GPUs [0, 1]",
        "WARNING [argparse_utils.py:80] argument 'disable_log_requests' is deprecated",
        "INFO [default_loader.py:262] Loading weights took 612.33 seconds",
        'INFO 127.0.0.1:5555 - "GET /health HTTP/1.1" 503',
    ]
    assert classify(lines) is None
    assert (
        last_progress(lines) == "INFO [default_loader.py:262] Loading weights took 612.33 seconds"
    )


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"ActiveState": "activating", "SubState": "start-pre", "NRestarts": "0"}, ""),
        ({"ActiveState": "active", "SubState": "running", "NRestarts": "0"}, ""),
        (
            {"ActiveState": "failed", "Result": "exit-code", "ExecMainStatus": "1"},
            "the unit entered failed (Result=exit-code, exit status 1)",
        ),
        (
            {
                "ActiveState": "activating",
                "SubState": "auto-restart",
                "ExecMainStatus": "1",
                "Result": "exit-code",
            },
            "the service exited (exit status 1, Result=exit-code) and systemd is restarting it",
        ),
        (
            {"ActiveState": "active", "SubState": "running", "NRestarts": "3"},
            "the service exited (exit status , Result=?) and systemd is restarting it",
        ),
    ],
)
def test_the_units_state_says_when_the_start_failed(state: dict, expected: str) -> None:
    assert unit_verdict(state, restarts_at_start=2 if state.get("NRestarts") == "3" else 0) == (
        expected
    )


def command(*argv: str, key: str = "ExecStart") -> CommandInfo:
    return CommandInfo("Service", key, 10, "", argv[0], tuple(argv), "x.service")


def test_the_vllm_server_and_where_it_answers_come_from_the_exact_argv() -> None:
    service = vllm_service(
        [
            command("/bin/bash", "-c", "wait for gpus", key="ExecStartPre"),
            command(
                "/opt/vllm/bin/vllm",
                "serve",
                "/models/k2",
                "--served-model-name",
                "kimi",
                "kimi-alias",
                "--port=9001",
                "--host",
                "0.0.0.0",
                "--api_key",
                "s3cret",
                "-tp",
                "8",
            ),
        ],
        {},
    )
    assert (service.style, service.model, service.served_model_name) == (
        "serve",
        "/models/k2",
        "kimi",
    )
    assert (service.address, service.port, service.api_key) == ("127.0.0.1", 9001, "s3cret")
    assert service.base_url == "http://127.0.0.1:9001"
    assert service.vllm_args[:2] == ("/models/k2", "--served-model-name")


def test_the_api_server_module_with_defaults_and_the_key_from_the_environment() -> None:
    service = vllm_service(
        [
            command(
                "/opt/venv/bin/python3",
                "-m",
                "vllm.entrypoints.openai.api_server",
                "--model",
                "m",
                "--host",
                "10.0.0.5",
            )
        ],
        {"VLLM_API_KEY": "from-env"},
    )
    assert (service.style, service.model, service.served_model_name) == ("api_server", "m", "m")
    assert (service.address, service.port, service.api_key) == ("10.0.0.5", 8000, "from-env")


def test_a_unit_without_a_vllm_server_is_said_so() -> None:
    with pytest.raises(ValueError, match="no ExecStart= of this unit runs a vLLM server"):
        vllm_service([command("/usr/bin/sleep", "100")], {})
