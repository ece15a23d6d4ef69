"""How much is taken from a host and kept (`hostops.channel.bounds`), with the local
transport: a file is stat-ed before it is opened, a command's streams are capped while
they are read, stored text is clipped with a marker."""

from __future__ import annotations

import os
import sys
import tracemalloc
from pathlib import Path

import pytest

from hostops.channel import FileRefused
from hostops.channel.bounds import (
    MAX_STDERR_BYTES,
    MAX_STDOUT_BYTES,
    MIB,
    CappedBuffer,
    clip_json,
    clip_text,
)
from hostops.channel.local import LocalTransport


def test_a_capped_buffer_keeps_its_head_and_tail_and_counts_the_rest() -> None:
    buffer = CappedBuffer(10, tail=4)
    for chunk in (b"abc", b"defghij", b"klmnop", b"qr"):
        buffer.feed(chunk)
    assert buffer.dropped == 18 - 10
    assert buffer.head() == b"abcdef"
    assert buffer.value(stream="stderr") == (
        b"abcdef\n[\xe2\x80\xa6 8 bytes of stderr not kept: specadmin keeps 10 \xe2\x80\xa6]\nopqr"
    )
    whole = CappedBuffer(10)
    whole.feed(b"0123456789")
    assert (whole.value(), whole.dropped) == (b"0123456789", 0)


def test_clipped_text_keeps_both_ends_and_says_how_much_is_left_out() -> None:
    text = "first line\n" + "x" * 100_000 + "\nlast line"
    clipped = clip_text(text, 1000)
    assert len(clipped) <= 1000
    assert clipped.startswith("first line\n") and clipped.endswith("\nlast line")
    assert "characters not kept …]" in clipped
    assert clip_text("short", 1000) == "short"
    nested = clip_json({"lines": ["y" * 5000, 3], "k" * 5000: None}, 100)
    assert all(len(s) <= 100 for s in [nested["lines"][0], *nested])
    assert nested["lines"][1] == 3


@pytest.mark.parametrize("make", ["fifo", "device", "directory"])
def test_the_local_transport_never_opens_a_fifo_or_a_device(tmp_path: Path, make: str) -> None:
    path = tmp_path / "unit.service"
    if make == "fifo":
        os.mkfifo(path)  # opening it to read would block until a writer came
    elif make == "device":
        path.symlink_to("/dev/zero")  # reading it would never end
    else:
        path.mkdir()
    with LocalTransport() as t, pytest.raises(FileRefused, match="not a regular file"):
        t.read_file(str(path))


def test_the_local_transport_refuses_a_file_over_the_limit_or_reads_its_head(
    tmp_path: Path,
) -> None:
    path = tmp_path / "big"
    with open(path, "wb") as f:
        f.truncate(200 * 1000 * 1000)  # sparse
    with LocalTransport() as t:
        with pytest.raises(FileRefused, match="it is 200,000,000 bytes, more than the 1,024"):
            t.read_file(str(path), limit=1024)
        assert t.read_file(str(path), limit=16, partial=True) == b"\0" * 16


def test_local_command_output_is_capped_per_stream_while_it_is_read() -> None:
    script = (
        "import sys\n"
        "for _ in range(48):\n"
        "    sys.stdout.buffer.write(b'o' * MIB); sys.stderr.buffer.write(b'e' * MIB)\n"
    ).replace("MIB", str(MIB))
    tracemalloc.start()
    try:
        with LocalTransport() as t:
            result = t.run([sys.executable, "-c", script], timeout=120)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.ok
    assert len(result.stdout) == MAX_STDOUT_BYTES
    assert result.stdout_dropped == 48 * MIB - MAX_STDOUT_BYTES
    assert result.stderr_dropped == 48 * MIB - MAX_STDERR_BYTES
    assert b"bytes of stderr not kept" in result.stderr
    # The buffers and the one copy of each handed back, whatever the command printed.
    assert peak < 2 * (MAX_STDOUT_BYTES + MAX_STDERR_BYTES) + 8 * MIB, f"{peak:,} bytes"
