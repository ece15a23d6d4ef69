"""TEST-ONLY OpenAI-compatible streaming server running a random-weight causal LM.

Not vLLM and not product code: it exists so servebench and the regression gate can be shown
on a real GPU — a baseline and a prompt-lookup (n-gram) speculative variant, the
seed deployment's experiment in miniature. Needs torch, transformers and aiohttp.
"""
