"""Shared pytest configuration."""

from __future__ import annotations

import os

# Tests count ShellCheck processes and compare fresh results: no cross-run disk cache
# (tests/linting/test_shellcheck_diskcache.py turns it on explicitly).
os.environ["LINTUNITS_CACHE_DIR"] = "off"

# Real systemd + sshd test hosts (tests/testhost): fixtures `testhost`, `testhost_factory`.
pytest_plugins = ["tests.testhost.pytest_plugin"]

# CI runs must be reproducible: the same examples every run (a failure found while
# developing is kept in .hypothesis/ and replayed locally; CI starts without that folder).
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    _hypothesis_settings.load_profile("ci")
