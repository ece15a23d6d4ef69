"""Lazy file positions: runs of consecutive characters behave like the tuples they stand
for (continuation lines, quoted words)."""

from __future__ import annotations

import dataclasses

import pytest

from linting.spans import LineOrigins, Pos, RunOrigins, Span, Traced, joined_origins


def as_tuple(line: int, start: int, size: int) -> tuple[Pos, ...]:
    return tuple(Pos(line, start + i) for i in range(size))


def test_joined_runs_equal_the_tuple_of_their_positions() -> None:
    joined = joined_origins([LineOrigins(1, 10, 3), LineOrigins(2, 1, 4)])
    expected = as_tuple(1, 10, 3) + as_tuple(2, 1, 4)
    assert isinstance(joined, RunOrigins)
    assert joined == expected and expected == joined
    assert hash(joined) == hash(expected)
    assert list(joined) == list(expected)
    assert [joined[i] for i in range(-7, 7)] == [expected[i] for i in range(-7, 7)]


def test_slices_within_and_across_runs_match_tuple_slices() -> None:
    joined = joined_origins([LineOrigins(1, 10, 3), LineOrigins(2, 1, 4), LineOrigins(3, 5, 2)])
    expected = tuple(joined)
    for start in range(len(expected) + 1):
        for stop in range(len(expected) + 1):
            assert tuple(joined[start:stop]) == expected[start:stop], (start, stop)
    assert isinstance(joined[3:6], LineOrigins)  # within one line: no run list at all


def test_adjacent_pieces_on_one_line_merge_into_one_run() -> None:
    merged = joined_origins([LineOrigins(4, 2, 3), LineOrigins(4, 5, 2)])
    assert merged == LineOrigins(4, 2, 5)
    assert isinstance(merged, LineOrigins)


def test_pieces_that_are_not_runs_make_a_tuple() -> None:
    mixed = joined_origins([LineOrigins(1, 1, 2), (Pos(7, 7),) * 3])
    assert mixed == (Pos(1, 1), Pos(1, 2), Pos(7, 7), Pos(7, 7), Pos(7, 7))
    assert isinstance(mixed, tuple)


def test_span_of_text_over_two_lines_runs_from_first_to_last_character() -> None:
    text = Traced("abcdefg", joined_origins([LineOrigins(1, 10, 3), LineOrigins(2, 1, 4)]))
    assert text.span() == Span(Pos(1, 10), Pos(2, 5))
    assert text.span(1, 2) == Span(Pos(1, 11), Pos(1, 12))
    assert text.strip() is text


def test_lazy_positions_slice_span_and_strip_like_a_tuple_of_them() -> None:
    text = " ab c\td  "
    for origins in (
        LineOrigins(3, 5, 9),
        joined_origins([LineOrigins(1, 10, 3), LineOrigins(2, 1, 4), LineOrigins(3, 5, 2)]),
    ):
        lazy, eager = Traced(text, origins), Traced(text, tuple(origins))
        for start in range(-len(text) - 1, len(text) + 2):
            for stop in (*range(-len(text) - 1, len(text) + 2), None):
                a, b = lazy[start:stop], eager[start:stop]
                assert (a.text, tuple(a.origins), a.anchor) == (b.text, b.origins, b.anchor)
                assert a.span() == b.span() and a.strip() == b.strip(), (start, stop)
                if 0 <= start <= len(text) and stop is not None and 0 <= stop <= len(text):
                    assert lazy.span(start, stop) == eager.span(start, stop), (start, stop)


def test_traced_checks_lengths_and_stays_frozen() -> None:
    for origins in (LineOrigins(1, 1, 2), (Pos(1, 1),) * 3, []):
        with pytest.raises(ValueError):
            Traced("abcd", origins)
    text = Traced("ab", LineOrigins(1, 1, 2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        text.text = "cd"  # type: ignore[misc]
    assert dataclasses.replace(text, text="cd") == Traced("cd", ((1, 1), (1, 2)))
    assert Traced("", (), Pos(4, 4)) == Traced("", ())  # the anchor does not compare
