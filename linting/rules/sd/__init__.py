"""SD: what systemd itself rejects or ignores while loading the unit file.

One module per rule, named after its code; the code table (linting/rules/codes.py) lists
them, and importing `linting.rules` registers them.
"""
