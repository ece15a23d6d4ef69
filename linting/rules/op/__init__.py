"""OP: how a GPU service behaves when systemd starts, stops and restarts it.

One module per rule, named after its code; the code table (linting/rules/codes.py) lists
them, and importing `linting.rules` registers them.
"""
