"""tests/conftest.py's collection hook: `--only-database-tests` (the PostgreSQL run's
filter) keeps exactly the tests that reach the database, through their mark or any fixture
in their closure; the tests rolled back in a transaction run before any test whose database
is flushed, then modules with real-worker tests."""

from __future__ import annotations

import pytest

from tests.conftest import pytest_collection_modifyitems, uses_database


class FakeItem:
    def __init__(
        self,
        fixturenames: list[str],
        marked: bool | pytest.Mark = False,
        module: str = "m",
        heavy: bool = False,
    ) -> None:
        self.fixturenames = fixturenames
        self.mark = pytest.mark.django_db.mark if marked is True else marked or None
        self.module = module
        self.heavy = heavy

    def get_closest_marker(self, name: str) -> object | None:
        if name == "qcluster":
            return pytest.mark.qcluster.mark if self.heavy else None
        return self.mark if name == "django_db" else None


@pytest.mark.parametrize(
    ("fixtures", "marked", "expected"),
    [
        (["tmp_path", "settings"], False, False),
        ([], True, True),
        (["trial_side", "db"], False, True),
        (["seed", "transactional_db"], False, True),
        (["live_server"], False, True),
    ],
)
def test_a_test_uses_the_database_through_its_mark_or_a_database_fixture_in_its_closure(
    fixtures: list[str], marked: bool, expected: bool
) -> None:
    assert uses_database(FakeItem(fixtures, marked)) is expected  # type: ignore[arg-type]


class FakeHook:
    def __init__(self) -> None:
        self.deselected: list[object] = []

    def pytest_deselected(self, items: list[object]) -> None:
        self.deselected.extend(items)


class FakeConfig:
    def __init__(self, only_database: bool) -> None:
        self.only_database = only_database
        self.hook = FakeHook()

    def getoption(self, name: str) -> bool:
        assert name == "--only-database-tests"
        return self.only_database


@pytest.mark.parametrize("only_database", [True, False])
def test_the_option_deselects_only_the_tests_without_a_database(only_database: bool) -> None:
    pure, marked, fixture = FakeItem(["tmp_path"]), FakeItem([], True), FakeItem(["db"])
    items = [pure, marked, fixture]
    config = FakeConfig(only_database)
    pytest_collection_modifyitems(config, items)  # type: ignore[arg-type]
    if only_database:
        assert items == [marked, fixture]
        assert config.hook.deselected == [pure], "reported as deselected, not lost"
    else:
        assert items == [marked, fixture, pure], "database tests first, all kept"
        assert config.hook.deselected == []


def test_modules_with_a_real_worker_test_come_first_whole_and_in_their_order() -> None:
    a1, a2 = FakeItem([], module="a"), FakeItem([], module="a")
    b1, b2 = FakeItem([], module="b"), FakeItem([], module="b", heavy=True)
    c1 = FakeItem([], module="c", heavy=True)
    items = [a1, a2, b1, b2, c1]
    pytest_collection_modifyitems(FakeConfig(False), items)  # type: ignore[arg-type]
    assert items == [b1, b2, c1, a1, a2]


@pytest.mark.parametrize(
    "flushed",
    [
        FakeItem([], pytest.mark.django_db(transaction=True).mark),
        FakeItem([], pytest.mark.django_db(True).mark),
        FakeItem([], pytest.mark.django_db(reset_sequences=True).mark),
        FakeItem(["transactional_db"]),
        FakeItem(["live_server"], True),
    ],
)
def test_tests_rolled_back_in_a_transaction_run_before_any_flushed_one_even_a_heavy_modules(
    flushed: FakeItem,
) -> None:
    """A flush deletes what data migrations wrote (the schedules): a rolled-back test that
    reads them must not come after one, though the heavy modules go first otherwise."""
    flushed.module, flushed.heavy = "heavy", True
    plain, rolled_back, by_fixture = FakeItem([]), FakeItem([], True), FakeItem(["db"])
    items = [plain, flushed, rolled_back, by_fixture]
    pytest_collection_modifyitems(FakeConfig(False), items)  # type: ignore[arg-type]
    assert items == [rolled_back, by_fixture, flushed, plain]
