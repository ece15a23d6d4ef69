"""VL: what `vllm serve` does with the arguments a unit gives it, per vLLM version.

Each check reads the argv the program actually receives (after systemd's unquoting and
`$` substitution), parsed against the generated catalog of the target vLLM version
(`--vllm-version`), and says whether vLLM exits at argument parsing, fails at engine
start, or silently runs something other than what was written.

One module per rule, named after its code; the code table (linting/rules/codes.py) lists
them, and importing `linting.rules` registers them.
"""
