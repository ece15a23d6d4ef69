"""Bad input: a clear error, partial results kept and marked incomplete."""

from __future__ import annotations

import pytest

from servebench import BenchError, RunSettings, run_sync
from tests.bench.conftest import StartDouble
from tests.doubles.vllm_double_http import spawn_api_process
from tests.ports import refusing_port


def _settings(url: str, **kw: object) -> RunSettings:
    base: dict[str, object] = {
        "url": url,
        "prompts": "chat",
        "max_tokens": 20,
        "concurrency": [2],
        "num_requests": 6,
        "warmup": 0,
        "stall_timeout_s": 1.0,
    }
    return RunSettings(**(base | kw))  # type: ignore[arg-type]


FAST = ("--ttft-ms", "20", "--tokens-per-s", "400")


def test_a_server_that_is_down_is_a_clear_error_before_anything_is_measured() -> None:
    with refusing_port() as port:
        url = f"http://127.0.0.1:{port}"
        with pytest.raises(
            BenchError, match=r"cannot connect to the server at http://127\.0\.0\.1"
        ):
            run_sync(_settings(url))


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("http_500", "HTTP 500 Internal Server Error: "),
        ("malformed_sse", "malformed SSE: event data is not JSON"),
        ("no_usage", "no usage block in the stream"),
        ("disconnect", "stream ended without [DONE]"),
        ("stall", "stream stalled: no data for 1 s"),
    ],
)
def test_a_fault_in_the_middle_of_a_run_keeps_the_good_requests_and_marks_it_incomplete(
    vllm_double: StartDouble, fault: str, message: str
) -> None:
    # the probe and the first 3 measured requests are served well, then every request fails
    url = vllm_double(*FAST, "--stream-fault", fault, "--stream-fault-after", "4", "--stall-s", "5")
    result = run_sync(_settings(url))
    level = result.levels[0]
    assert result.incomplete and level.incomplete
    assert (level.completed, level.failed) == (3, 3)
    assert level.total_output_tokens == 3 * 20
    assert level.tpot_ms.count == 3
    assert len(level.requests) == 6
    [(error, count)] = level.errors.items()
    assert error.startswith(message)
    assert count == 3


def test_the_first_request_failing_says_why_and_measures_nothing(vllm_double: StartDouble) -> None:
    url = vllm_double(*FAST, "--stream-fault", "http_500")
    with pytest.raises(BenchError, match=r"the first request to .* failed: HTTP 500"):
        run_sync(_settings(url))


def test_a_server_that_dies_mid_run_ends_the_run_with_what_was_measured() -> None:
    proc, url = spawn_api_process("--ttft-ms", "20", "--tokens-per-s", "100")
    seen: list[int] = []

    def progress(p: object) -> None:
        seen.append(1)
        if len(seen) == 2:
            proc.kill()

    try:
        result = run_sync(_settings(url, concurrency=[1, 2], num_requests=10), progress)
    finally:
        proc.kill()
        proc.wait()
    assert result.incomplete
    assert result.error.startswith("server stopped answering at concurrency 1: cannot connect")
    assert len(result.levels) == 1  # the second level never started
    level = result.levels[0]
    assert level.completed == 2
    assert level.failed >= 1


def test_an_unknown_model_is_a_clear_error(vllm_double: StartDouble) -> None:
    url = vllm_double(*FAST)
    with pytest.raises(BenchError, match=r"HTTP 404 .*The model `nope` does not exist"):
        run_sync(_settings(url, model="nope"))


def test_settings_that_cannot_work_are_refused_with_every_reason() -> None:
    with pytest.raises(ValueError, match="either a number of requests or a duration") as exc:
        RunSettings(url="http://x", num_requests=None, max_tokens=0, concurrency=[0])
    assert "max_tokens must be at least 1" in str(exc.value)
    assert "concurrency levels must be positive" in str(exc.value)


def test_a_cancelled_run_stops_sending_and_keeps_what_it_measured(
    vllm_double: StartDouble,
) -> None:
    url = vllm_double(*FAST)
    done: list[int] = []
    result = run_sync(
        _settings(url, concurrency=[1, 2], num_requests=10),
        progress=lambda p: done.append(p.done),
        should_stop=lambda: len(done) >= 3,
    )
    assert result.incomplete
    assert result.error == "cancelled"
    assert [lv.completed for lv in result.levels] == [3]
