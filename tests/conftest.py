"""Shared pytest configuration."""

from __future__ import annotations

import os

# Tests count ShellCheck processes and compare fresh results: no cross-run disk cache
# (tests/linting/test_shellcheck_diskcache.py turns it on explicitly).
os.environ["LINTUNITS_CACHE_DIR"] = "off"

# Real systemd + sshd test hosts (tests/testhost): fixtures `testhost`, `testhost_factory`;
# Debian's Chromium through Playwright (tests/browser.py): fixtures `page`, `open_page`.
pytest_plugins = ["tests.testhost.pytest_plugin", "tests.browser"]

# CI runs must be reproducible: the same examples every run (a failure found while
# developing is kept in .hypothesis/ and replayed locally; CI starts without that folder).
import pytest  # noqa: E402
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    _hypothesis_settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _audit_checkpoints_per_test(request: pytest.FixtureRequest, tmp_path) -> None:
    """Each test's audit chain has its own checkpoint file and witness file (shared ones
    would hold checkpoints of other tests' databases, which contradict this test's chain).

    Only where Django is loaded: the `gpu` tests run on GPU machines with
    `-p no:django` (no project dependencies there)."""
    if not request.config.pluginmanager.hasplugin("django"):
        return
    settings = request.getfixturevalue("settings")
    settings.AUDIT_CHECKPOINT_FILE = str(tmp_path / "audit-checkpoints.jsonl")
    settings.AUDIT_WITNESS_FILE = str(tmp_path / "audit-witness.jsonl")


# pytest-django's fixtures that give a test the database (its `django_db` mark asks for one
# of them too).
DATABASE_FIXTURES = frozenset(
    {
        "db",
        "transactional_db",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
        "live_server",
    }
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--only-database-tests",
        action="store_true",
        help="Deselect tests that use no database: the PostgreSQL run (make "
        "test-suites-postgres) would repeat the SQLite run of those exactly.",
    )


def uses_database(item: pytest.Item) -> bool:
    """Whether a test gets the database: a `django_db` mark or a database fixture anywhere
    in its fixture closure (`item.fixturenames` holds the whole closure)."""
    if item.get_closest_marker("django_db") is not None:
        return True
    return bool(DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())))


# Fixtures that give a test a database flushed after it instead of rolled back.
FLUSHED_DATABASE_FIXTURES = frozenset(
    {"transactional_db", "live_server", "django_db_reset_sequences"}
)


def rolled_back_database_test(item: pytest.Item) -> bool:
    """Whether a test's database work is rolled back after it (pytest-django's `db`), not
    flushed: a flush also deletes what data migrations wrote (the housekeeping schedules,
    the role groups), so these run before every flushed test, the order Django's own runner
    keeps (https://docs.djangoproject.com/en/5.2/topics/testing/overview/#order-in-which-tests-are-executed)."""
    if not uses_database(item):
        return False
    mark = item.get_closest_marker("django_db")
    if mark is not None:
        transaction = mark.kwargs.get("transaction", mark.args[0] if mark.args else False)
        reset = mark.kwargs.get("reset_sequences", mark.args[1] if len(mark.args) > 1 else False)
        if transaction or reset:
            return False
    return not FLUSHED_DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))


def heavy_modules_first(items: list[pytest.Item]) -> None:
    """After the rolled-back database tests (which must come before any flush), modules with
    a real-worker (`qcluster`) test move to the front, each module's tests together (its
    module-scoped hosts boot once) and in their order: xdist hands them out early, so the
    slowest tests (minutes each) do not start last while the other worker runs dry."""
    heavy = {item.module for item in items if item.get_closest_marker("qcluster") is not None}
    # Stable sort: rolled-back tests first, then heavy modules, each group in its order.
    items.sort(key=lambda item: (not rolled_back_database_test(item), item.module not in heavy))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    heavy_modules_first(items)
    if not config.getoption("--only-database-tests"):
        return
    kept = [item for item in items if uses_database(item)]
    dropped = [item for item in items if not uses_database(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
