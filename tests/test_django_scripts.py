"""The real-worker tests' Django script runner (tests/deploys/django_scripts.py) gives a
script what a fresh `python -c` would: its own argv and globals, its output, its error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploys.django_scripts import _RUNNERS, run_script, stop_runners
from tests.deploys.qcluster_support import base_env, manage

COUNT_USERS = """
import json, sys, django
django.setup()
from django.contrib.auth import get_user_model
print("noise first")
print(json.dumps({"argv": sys.argv[1:], "users": get_user_model().objects.count(),
                  "seen_before": "leftover" in globals()}))
leftover = 1
"""


def test_scripts_get_their_argv_fresh_globals_and_the_database_and_errors_come_back(
    tmp_path: Path,
) -> None:
    env = {**base_env(), "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    manage(env, "migrate", "--noinput", "-v0", "--skip-checks")
    try:
        first = run_script(env, COUNT_USERS, "a", "b c").splitlines()
        assert first[0] == "noise first"
        assert first[-1] == '{"argv": ["a", "b c"], "users": 0, "seen_before": false}'
        again = run_script(env, COUNT_USERS).splitlines()[-1]
        assert again == '{"argv": [], "users": 0, "seen_before": false}', "globals are fresh"
        assert len([k for k in _RUNNERS if ("DATABASE_URL", env["DATABASE_URL"]) in k]) == 1
        with pytest.raises(AssertionError, match="ZeroDivisionError"):
            run_script(env, "1 / 0")
        assert run_script(env, "print('still serving')") == "still serving\n"
    finally:
        stop_runners(env["DATABASE_URL"])
    assert not [k for k in _RUNNERS if ("DATABASE_URL", env["DATABASE_URL"]) in k]
