"""EX: what systemd does to `$`, `%` and quotes in Exec lines before the program runs.

One module per rule, named after its code; the code table (linting/rules/codes.py) lists
them, and importing `linting.rules` registers them.
"""
