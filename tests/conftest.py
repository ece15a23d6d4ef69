"""Shared pytest configuration."""

from __future__ import annotations

import os

# Tests count ShellCheck processes and compare fresh results: no cross-run disk cache
# (tests/linting/test_shellcheck_diskcache.py turns it on explicitly).
os.environ["LINTUNITS_CACHE_DIR"] = "off"

# Real systemd + sshd test hosts (tests/testhost): fixtures `testhost`, `testhost_factory`.
pytest_plugins = ["tests.testhost.pytest_plugin"]
