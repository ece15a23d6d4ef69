"""`python -m vllm.entrypoints.api_server`: vLLM's small demo server, whose parser is not
the OpenAI server's. Its `__main__` block (vllm/entrypoints/api_server.py) builds a
FlexibleArgumentParser with a few options of its own, then `AsyncEngineArgs.add_cli_args`:
the engine's options and nothing of the OpenAI frontend (no `--api-key`,
`--served-model-name`, `--chat-template`, no positional model).

The engine part comes from each release's generated catalog (the flags whose source is
vllm/engine/arg_utils.py). The generator (tools/gen_vllm_catalog.py) walks only the
`vllm serve` parser, so the demo server's own options are listed here, read from
vllm/entrypoints/api_server.py of vllm-project/vllm at commit 03f8611 (the 0.9 line; the
same eight options, `--enable-ssl-refresh` aside, since 0.6). An option some release
lacks is accepted here rather than reported: the linter errs towards silence.
"""

from __future__ import annotations

SOURCE = "vllm/entrypoints/api_server.py"
ENGINE_SOURCE = "vllm/engine/arg_utils.py"
# (option, argparse action kind, type) of the demo server's own options.
OWN_OPTIONS: tuple[tuple[str, str, str | None], ...] = (
    ("--host", "value", "str"),
    ("--port", "value", "int"),
    ("--ssl-keyfile", "value", "str"),
    ("--ssl-certfile", "value", "str"),
    ("--ssl-ca-certs", "value", "str"),
    ("--enable-ssl-refresh", "store_true", None),
    ("--ssl-cert-reqs", "value", "int"),
    ("--root-path", "value", "str"),
    ("--log-level", "value", "str"),
)
