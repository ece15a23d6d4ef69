"""Metric definitions (vLLM's calculate_metrics), SSE decoding and /metrics deltas."""

from __future__ import annotations

import pytest

from servebench.metrics import distribution_ms, percentile, summarize
from servebench.schema import BenchResult, RequestRecord
from servebench.specdecode import parse_spec_counters, spec_delta
from servebench.sse import DONE, MalformedStream, SSEDecoder
from tests.doubles.vllm_double_http import SpecMetrics, render_metrics
from tests.doubles.vllm_double_schedule import Chunk


def test_percentiles_interpolate_linearly_like_numpy() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    # numpy.percentile(values, [50, 90, 99]) → 3.0, 7.6, 9.76
    assert percentile(values, 50) == 3.0
    assert percentile(values, 90) == pytest.approx(7.6)
    assert percentile(values, 99) == pytest.approx(9.76)
    assert percentile([], 50) == 0.0


def test_std_is_the_population_std_in_milliseconds() -> None:
    d = distribution_ms([0.001, 0.003])
    assert (d.mean, d.median, d.std, d.count) == (pytest.approx(2.0), 2.0, pytest.approx(1.0), 2)


def _record(ttft: float, itl: list[float], tokens: int, ok: bool = True) -> RequestRecord:
    return RequestRecord(
        success=ok,
        prompt_tokens=5,
        output_tokens=tokens,
        ttft_s=ttft,
        itl_s=itl,
        latency_s=ttft + sum(itl),
        error="" if ok else "HTTP 500 x",
    )


def test_tpot_divides_by_tokens_not_chunks_and_itl_pools_every_chunk_gap() -> None:
    # 7 tokens in 3 chunks (1 + 3 + 3): TPOT = (0.1 + 0.2 - 0.1) / 6, ITL = both gaps
    a = _record(0.1, [0.1, 0.1], 7)
    b = _record(0.2, [0.05], 1)  # one-token answers have no TPOT (vLLM skips them)
    failed = _record(0.3, [0.3], 9, ok=False)
    level = summarize([a, b, failed], 2.0, concurrency=2, request_rate=None)
    assert level.tpot_ms.count == 1
    assert level.tpot_ms.median == pytest.approx(200 / 6)
    assert level.itl_ms.count == 3
    assert level.ttft_ms.mean == pytest.approx(150)
    assert (level.completed, level.failed, level.total_output_tokens) == (2, 1, 8)
    assert level.output_throughput == 4.0
    assert level.request_throughput == 1.0
    assert level.total_input_tokens == 10
    assert level.incomplete
    assert level.errors == {"HTTP 500 x": 1}


def test_a_result_survives_a_round_trip_through_json_dicts() -> None:
    level = summarize([_record(0.1, [0.1, 0.1], 7)], 1.0, concurrency=1, request_rate=None)
    result = BenchResult(engine="servebench", settings={"seed": 1}, levels=[level], model="m")
    again = BenchResult.from_dict(result.to_dict())
    assert again == result
    assert again.levels[0].samples_ms("tpot") == [pytest.approx(200 / 6)]
    with pytest.raises(ValueError, match="not a servebench result"):
        BenchResult.from_dict({"engine": "x"})


def test_sse_events_split_across_reads_are_joined_and_comments_skipped() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b': ping\n\ndata: {"a"') == []
    assert decoder.feed(b": 1}\r\n\r\ndata: [DONE]\n") == [{"a": 1}]
    assert decoder.close() == [DONE]


def test_malformed_sse_says_what_arrived() -> None:
    with pytest.raises(MalformedStream, match=r"not JSON .*'\{\"id\": broken'"):
        SSEDecoder().feed(b'data: {"id": broken\n\n')
    with pytest.raises(MalformedStream, match="not a JSON object"):
        SSEDecoder().feed(b"data: [1, 2]\n\n")
    with pytest.raises(MalformedStream, match="not an SSE field line"):
        SSEDecoder().feed(b"garbage\n\n")


def test_event_data_that_is_not_utf8_is_a_malformed_stream_not_a_crash() -> None:
    with pytest.raises(MalformedStream, match=r"not JSON .*can't decode byte 0xff"):
        SSEDecoder().feed(b'data: {"text": "\xff"}\n\n')


def test_spec_decode_delta_from_the_doubles_metrics() -> None:
    m = SpecMetrics()
    before = parse_spec_counters(render_metrics(m, "m", True, 3))
    for _ in range(4):
        m.add(Chunk(at_s=0, tokens=3, drafts=1, draft_tokens=3, accepted=2))
    after = parse_spec_counters(render_metrics(m, "m", True, 3))
    stats = spec_delta(before, after)
    assert stats is not None
    assert (stats.num_drafts, stats.draft_tokens, stats.accepted_tokens) == (4, 12, 8)
    assert stats.acceptance_rate == pytest.approx(200 / 3)
    assert stats.acceptance_length == 3.0
    assert stats.per_position_acceptance_rates == [1.0, 1.0, 0.0]


def test_no_spec_counters_means_no_acceptance_figures() -> None:
    text = render_metrics(SpecMetrics(), "m", spec_enabled=False)
    assert parse_spec_counters(text) is None
    assert spec_delta(None, None) is None
