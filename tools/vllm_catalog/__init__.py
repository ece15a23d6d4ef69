"""The pieces of tools/gen_vllm_catalog.py: the `vllm serve` command line of a vLLM
release, read from its sources with `ast` (never imported)."""
