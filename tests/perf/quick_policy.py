"""Benchmark settings for the end-to-end tests and their benchmarks: 4 requests × 32 tokens
at 1 stream, twice, judged on those (no more repeats while not sure:
tests/perf/test_more_repeats.py has those). Django-free: benchmarks/rollout.py imports it,
through tests/fleet/rollout_support.py, before Django is set up."""

QUICK_BENCH_POLICY = {
    "concurrency": [1],
    "num_requests": 4,
    "max_tokens": 32,
    "repeats": 2,
    "prompts": "chat",
    "noisy_budget_s": 0,
}
