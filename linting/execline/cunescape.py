"""Port of systemd's `cunescape_one()` (src/basic/escape.c).

Characters are Python str; a raw byte from `\\xHH` or octal escapes at or above 0x80 is
stored as the surrogate-escape code point (U+DC80..U+DCFF), so `to_bytes()` gives back the
exact bytes the program receives.
"""

from __future__ import annotations

_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    '"': '"',
    "'": "'",
    "s": " ",  # systemd's extension of the XDG syntax
}
_HEX = "0123456789abcdefABCDEF"
_OCT = "01234567"


def _byte(value: int) -> str:
    return chr(value) if value < 0x80 else chr(0xDC00 + value)


def _unichar_is_valid(value: int) -> bool:
    """`unichar_is_valid()` (src/basic/utf8.c): no surrogates, no non-characters
    U+FDD0..U+FDEF or U+xFFFE/U+xFFFF (systemd 252 refuses `\\U0000FFFE`, `\\U0000FDD0`)."""
    return not (
        value >= 0x110000
        or 0xD800 <= value <= 0xDFFF
        or 0xFDD0 <= value <= 0xFDEF
        or (value & 0xFFFE) == 0xFFFE
    )


def cunescape_one(text: str, start: int) -> tuple[str, int] | None:
    """Decode the escape whose letter is at text[start] (after the backslash).

    Returns (decoded, consumed) or None where systemd returns -EINVAL.
    """
    if start >= len(text):
        return None
    c = text[start]
    if c in _SIMPLE:
        return _SIMPLE[c], 1
    if c == "x":
        return _hex_byte(text[start + 1 : start + 3])
    if c in "uU":
        return _unicode(c, text[start + 1 : start + 1 + (4 if c == "u" else 8)])
    if c in _OCT:
        return _octal_byte(text[start : start + 3])
    return None


def _hex_byte(digits: str) -> tuple[str, int] | None:
    """`\\xHH`: exactly two hex digits; systemd refuses NUL bytes."""
    if len(digits) < 2 or any(d not in _HEX for d in digits):
        return None
    value = int(digits, 16)
    return (_byte(value), 3) if value else None


def _unicode(letter: str, digits: str) -> tuple[str, int] | None:
    """`\\uXXXX` / `\\UXXXXXXXX`: no NUL, nothing above U+10FFFF, and for `\\U` only
    valid characters."""
    width = 4 if letter == "u" else 8
    if len(digits) < width or any(d not in _HEX for d in digits):
        return None
    value = int(digits, 16)
    if value == 0 or value > 0x10FFFF:
        return None
    if letter == "U" and not _unichar_is_valid(value):  # checked only for \U
        return None
    return chr(value), width + 1


def _octal_byte(digits: str) -> tuple[str, int] | None:
    """`\\NNN`: exactly three octal digits, 1..255."""
    if len(digits) < 3 or any(d not in _OCT for d in digits):
        return None
    value = int(digits, 8)
    if value == 0 or value > 255:
        return None
    return _byte(value), 3


def to_bytes(word: str) -> bytes:
    """The bytes of a decoded word as the kernel passes them to the program."""
    try:
        return word.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return word.encode("utf-8", "surrogatepass")
