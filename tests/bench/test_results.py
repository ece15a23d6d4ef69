"""Prompt sets, the regression gate and the import of `vllm bench serve` results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servebench.gate import NOISY, PASS, REGRESSED, compare_metric, gate
from servebench.metrics import summarize
from servebench.prompts import PromptError, builtin_prompts, select_prompts
from servebench.schema import ENGINE_VLLM, BenchResult, LevelResult, RequestRecord
from servebench.vllm_import import VllmResultError, from_vllm_dict, load_vllm_result

FIXTURES = Path(__file__).parent / "fixtures"


def test_the_same_seed_gives_the_same_prompts_and_another_seed_others() -> None:
    assert builtin_prompts("mix", 12, seed=7) == builtin_prompts("mix", 12, seed=7)
    assert builtin_prompts("mix", 12, seed=7) != builtin_prompts("mix", 12, seed=8)


def test_the_seed_mix_is_one_third_each_and_the_summary_prompt_is_long() -> None:
    prompts = builtin_prompts("mix", 30, seed=0)
    kinds = [p.kind for p in prompts]
    assert {k: kinds.count(k) for k in set(kinds)} == {"chat": 10, "code": 10, "summary": 10}
    summary = next(p for p in prompts if p.kind == "summary")
    chat = next(p for p in prompts if p.kind == "chat")
    assert len(summary.text.split()) > 1900
    assert len(chat.text.split()) < 20


def test_jsonl_prompts_are_read_and_bad_lines_named(tmp_path: Path) -> None:
    good = tmp_path / "p.jsonl"
    good.write_text(
        '{"prompt": "hello"}\n\n'
        '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 9}\n'
    )
    prompts = select_prompts(str(good), 5, seed=1)
    assert len(prompts) == 5
    assert {p.text for p in prompts} == {"hello", "hi"}
    assert select_prompts(str(good), 5, seed=1) == prompts
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\n{"prompt": 3}\n')
    with pytest.raises(PromptError, match=r"bad\.jsonl:2: expected 'prompt'"):
        select_prompts(str(bad), 1, seed=0)
    bad.write_text("{nope\n")
    with pytest.raises(PromptError, match=r"bad\.jsonl:1: not JSON"):
        select_prompts(str(bad), 1, seed=0)
    with pytest.raises(PromptError, match="unknown prompt set"):
        builtin_prompts("poetry", 1, seed=0)


def test_a_slowdown_beyond_the_threshold_with_separate_repeats_is_a_regression() -> None:
    # the seed: 74 tok/s baseline, the n-gram variant 15% slower
    c = compare_metric("output_throughput", 1, [74.0, 73.5, 74.4], [62.9, 63.1, 62.5])
    assert c.verdict == REGRESSED
    assert c.change_pct == pytest.approx(15, abs=0.5)
    assert not c.overlap


def test_a_change_within_the_threshold_passes() -> None:
    assert compare_metric("tpot_p50_ms", 1, [13.5, 13.6], [13.9, 14.0]).verdict == PASS
    assert compare_metric("output_throughput", 1, [74.0], [80.0]).verdict == PASS  # faster


def test_a_large_change_that_the_repeats_spread_also_covers_is_noise() -> None:
    c = compare_metric("ttft_p50_ms", 8, [100.0, 130.0, 101.0], [112.0, 99.0, 115.0])
    assert c.change_pct == pytest.approx(112 / 101 * 100 - 100)
    assert c.overlap
    assert c.verdict == NOISY


def _run(tok_s: list[float], concurrency: int = 1) -> BenchResult:
    levels = []
    for repeat, rate in enumerate(tok_s):
        # one request of 101 tokens whose TPOT matches the rate
        tpot = 1 / rate
        record = RequestRecord(
            success=True,
            output_tokens=101,
            ttft_s=0.05,
            itl_s=[tpot] * 100,
            latency_s=0.05 + 100 * tpot,
        )
        level = summarize([record], 0.05 + 100 * tpot, concurrency=concurrency, request_rate=None)
        level.repeat = repeat
        levels.append(level)
    return BenchResult(engine="servebench", settings={}, levels=levels)


def test_the_gate_names_each_regressed_metric_and_level() -> None:
    result = gate(_run([74.0, 74.2]), _run([62.9, 63.0]))
    assert result.verdict == REGRESSED
    assert any(r.startswith("Output tokens/s at 1 stream down 1") for r in result.reasons)
    assert any(r.startswith("TPOT p50 at 1 stream up 1") for r in result.reasons)
    assert gate(_run([74.0]), _run([73.0])).verdict == PASS
    with pytest.raises(ValueError, match="share no concurrency level"):
        gate(_run([74.0], concurrency=1), _run([74.0], concurrency=8))


def test_a_vllm_bench_serve_result_imports_into_the_same_schema() -> None:
    result = load_vllm_result(FIXTURES / "vllm_bench_serve_result.json")
    assert result.engine == ENGINE_VLLM
    assert result.model == "Qwen/Qwen3-8B"
    assert result.settings["request_rate"] == "inf"
    [level] = result.levels
    assert isinstance(level, LevelResult)
    assert (level.concurrency, level.request_rate) == (2, None)
    assert (level.completed, level.failed, level.total_output_tokens) == (2, 1, 14)
    assert level.errors == {
        "aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected": 1
    }
    # recomputed from the raw lists with servebench's definitions = vLLM's own summary
    assert level.ttft_ms.mean == pytest.approx(150.0)
    assert level.tpot_ms.mean == pytest.approx(29.1667, abs=1e-3)
    assert level.itl_ms.median == pytest.approx(50.0)
    assert level.e2el_ms.p99 == pytest.approx(349.5)
    assert level.output_throughput == pytest.approx(7.0)
    assert level.spec_decode is not None
    assert (level.spec_decode.acceptance_rate, level.spec_decode.acceptance_length) == (40.0, 2.2)
    assert result.incomplete


def test_a_summary_only_vllm_result_uses_its_own_figures() -> None:
    data = json.loads((FIXTURES / "vllm_bench_serve_result.json").read_text())
    for key in ("ttfts", "itls", "latencies", "output_lens", "errors"):
        del data[key]
    level = from_vllm_dict(data).levels[0]
    assert level.tpot_ms.median == 29.1667
    assert level.ttft_ms.p99 == 199.0
    assert level.failed == 1


def test_a_file_that_is_not_a_vllm_result_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"levels": []}')
    with pytest.raises(VllmResultError, match="not a vllm bench serve result"):
        load_vllm_result(path)
    path.write_text("{")
    with pytest.raises(VllmResultError, match="cannot read"):
        load_vllm_result(path)
