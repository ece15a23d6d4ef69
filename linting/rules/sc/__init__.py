"""SC: ShellCheck on the scripts of `bash|sh|dash|ksh -c SCRIPT` commands, as the shell
receives them, with positions mapped back into the unit file (hadolint's approach).

One module per rule, named after its code; the code table (linting/rules/codes.py) lists
them, and importing `linting.rules` registers them.
"""
