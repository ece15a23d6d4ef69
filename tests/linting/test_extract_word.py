"""Tests for linting.execline.extract_word and cunescape: systemd's
`extract_first_word(EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE)` with the relaxed retry of
`extract_first_word_and_warn()`.

Load-time outcomes (warning vs. dropped vs. fatal) were checked with systemd 252's
`systemd-analyze verify`; e.g. `\\q` and `'\\q'` both log "Ignoring unknown escape
sequences", `\\x00` is kept verbatim with that warning.
"""

from __future__ import annotations

import pytest

from linting.execline.cunescape import cunescape_one, to_bytes
from linting.execline.extract_word import ExtractError, extract_first_word
from linting.spans import Pos, Traced


def traced(text: str) -> Traced:
    return Traced(text, tuple(Pos(1, i + 1) for i in range(len(text))))


def words(text: str) -> list[str]:
    t = traced(text)
    result: list[str] = []
    pos = 0
    while True:
        word, pos = extract_first_word(t, pos)
        if word is None:
            return result
        result.append(word.value.text)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("a b  c", ["a", "b", "c"]),
        ("  a\tb \n c  ", ["a", "b", "c"]),
        ("", []),
        ("   ", []),
        ('"a b" c', ["a b", "c"]),
        ("'a b' c", ["a b", "c"]),
        ('a"b c"d', ["ab cd"]),  # quotes open and close inside a word
        ("--x='{\"k\": 1}'", ['--x={"k": 1}']),
        ('""', [""]),  # an empty quoted word is still a word
        ("'' x", ["", "x"]),
        ("a'b'\"c\"d", ["abcd"]),
    ],
)
def test_words_split_on_blanks_and_quotes_group(line, expected):
    assert words(line) == expected


@pytest.mark.parametrize(
    ("escape", "decoded"),
    [
        ("\\n", "\n"),
        ("\\t", "\t"),
        ("\\\\", "\\"),
        ('\\"', '"'),
        ("\\'", "'"),
        ("\\s", " "),
        ("\\x41", "A"),
        ("\\101", "A"),
        ("\\u00e9", "é"),
        ("\\U0001F600", "\U0001f600"),
        ("\\a", "\a"),
    ],
)
@pytest.mark.parametrize("quote", ["", "'", '"'])
def test_c_escapes_work_outside_and_inside_both_quote_kinds(escape, decoded, quote):
    assert words(f"{quote}x{escape}y{quote}") == [f"x{decoded}y"]


def test_escaped_blank_does_not_split_the_word():
    assert words("a\\sb c") == ["a b", "c"]


def test_escaped_quote_does_not_open_a_quote():
    assert words('a\\"b c') == ['a"b', "c"]


@pytest.mark.parametrize("escape", ["\\q", "\\d", "\\x00", "\\000", "\\xZZ", "\\u0000", "\\8"])
def test_unknown_or_invalid_escape_is_kept_verbatim(escape):
    t = traced(f"a{escape}b")
    word, _ = extract_first_word(t, 0)
    assert word is not None
    assert word.value.text == f"a{escape}b"
    assert word.unknown_escapes == (1,)


def test_unknown_escape_inside_quotes_is_kept_verbatim_too():
    assert words("'\\d+'") == ["\\d+"]


def test_unknown_escape_fails_without_relaxed_retry():
    with pytest.raises(ExtractError) as exc:
        extract_first_word(traced("A=\\d"), 0, relax_escapes=False)
    assert exc.value.offset == 2


def test_x00_is_refused_by_cunescape():
    assert cunescape_one("x00", 0) is None
    assert cunescape_one("x01", 0) == ("\x01", 3)


def test_octal_above_255_is_refused():
    assert cunescape_one("400", 0) is None
    assert cunescape_one("377", 0) == ("\udcff", 3)


def test_high_bytes_from_hex_escapes_reach_the_program_as_raw_bytes():
    (word,) = words("\\xff\\x41")
    assert to_bytes(word) == b"\xffA"


def test_invalid_code_point_in_big_u_escape_is_refused():
    assert cunescape_one("U0000D800", 0) is None
    assert cunescape_one("U00110000", 0) is None


@pytest.mark.parametrize("line", ['"abc', "'abc", 'a"b', "x 'y", "'a\\'"])
def test_unbalanced_quote_raises_at_the_opening_quote(line):
    t = traced(line)
    with pytest.raises(ExtractError) as exc:
        pos = 0
        while True:
            word, pos = extract_first_word(t, pos)
            if word is None:
                break
    assert line[exc.value.offset] in "'\""


def test_word_offsets_cover_the_raw_text():
    t = traced('  ab"c d" e')
    word, pos = extract_first_word(t, 0)
    assert (word.start, word.end) == (2, 9)
    assert pos == 10
    assert [(q.quote, q.open, q.close) for q in word.quotes] == [('"', 4, 8)]


def test_decoded_characters_point_at_their_source():
    t = traced("x\\ty")
    word, _ = extract_first_word(t, 0)
    assert word.value.text == "x\ty"
    # the tab comes from the backslash at column 2, `y` from column 4
    assert word.value.origins == (Pos(1, 1), Pos(1, 2), Pos(1, 4))


@pytest.mark.parametrize("code", ["U0000FFFE", "U0000FDD0", "U0001FFFF", "U0000D800"])
def test_big_u_escape_of_a_non_character_is_refused(code):
    # systemd 252: "Ignoring unknown escape sequences" for each of these
    assert cunescape_one(code, 0) is None


@pytest.mark.parametrize("code", ["uD800", "uFFFE", "U0000FFFD"])
def test_small_u_escape_is_not_checked_for_validity(code):
    # systemd 252 accepts `\uD800` and `\uFFFE` silently (no unichar_is_valid() for \u)
    assert cunescape_one(code, 0) is not None
