"""The vLLM double's control file (tests/doubles/vllm_double_control.py): a frozen engine
behind a healthy API, and an acceptance rate changed while the server runs."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.request
from pathlib import Path

from tests.doubles.vllm_double_config import DoubleConfig
from tests.doubles.vllm_double_http import serving


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return answer.status, answer.read().decode()


def _counter(text: str, name: str) -> float:
    match = re.search(rf"^{re.escape(name)}{{[^}}]*}} (\S+)$", text, re.M)
    assert match, name
    return float(match.group(1))


def _complete(base: str, max_tokens: int = 20) -> None:
    body = json.dumps({"model": "m", "prompt": "p", "max_tokens": max_tokens}).encode()
    request = urllib.request.Request(
        f"{base}/v1/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()


def test_a_frozen_double_keeps_its_requests_running_and_its_health_while_no_token_moves(
    tmp_path: Path,
) -> None:
    control = tmp_path / "control.json"
    cfg = DoubleConfig(ttft_ms=5, itl_ms=5, control_file=str(control))
    with serving(cfg) as (base, _):
        control.write_text(json.dumps({"freeze": True}))
        time.sleep(0.1)
        done = threading.Event()

        def request() -> None:
            _complete(base)
            done.set()

        threading.Thread(target=request, daemon=True).start()
        time.sleep(0.3)
        first = _get(f"{base}/metrics")[1]
        time.sleep(0.3)
        second = _get(f"{base}/metrics")[1]
        assert _get(f"{base}/health")[0] == 200
        assert _counter(second, "vllm:num_requests_running") == 1
        assert _counter(first, "vllm:generation_tokens_total") == 0
        assert _counter(second, "vllm:generation_tokens_total") == 0
        assert not done.is_set()
        control.write_text(json.dumps({}))
        assert done.wait(5), "the request finished once the engine was thawed"
        assert _counter(_get(f"{base}/metrics")[1], "vllm:generation_tokens_total") == 20


def test_the_acceptance_rate_set_while_serving_applies_to_the_next_requests(
    tmp_path: Path,
) -> None:
    control = tmp_path / "control.json"
    cfg = DoubleConfig(ttft_ms=1, itl_ms=1, acceptance_rate=1.0, control_file=str(control))
    with serving(cfg, num_spec_tokens=3) as (base, state):
        _complete(base, 41)
        assert (state.metrics.accepted, state.metrics.draft_tokens) == (30, 30)
        control.write_text(json.dumps({"acceptance_rate": 0.0}))
        time.sleep(0.1)
        _complete(base, 41)
        assert state.metrics.accepted == 30 and state.metrics.draft_tokens == 30 + 40 * 3
