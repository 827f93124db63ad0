"""The front door's standard streams (__main__): once their reader has gone, every later write goes
to /dev/null quietly, so a command ends with its own exit code (`| head -1`); a stream without a
file descriptor is used as it is."""

from __future__ import annotations

import io
import os

from senpi_guard import __main__ as front


def test_a_stream_whose_reader_went_away_takes_every_later_write_quietly():
    read, write = os.pipe()
    os.close(read)  # (the reader went away)
    stream = front._reader_may_go(os.fdopen(write, "w", closefd=False))
    try:
        stream.write("x" * 100_000)
        stream.flush()  # (EPIPE: no exception)
        stream.write("and more\n")
        stream.flush()
        assert os.readlink(f"/proc/self/fd/{stream.fileno()}") == os.devnull
        assert stream.isatty() is False
    finally:
        os.close(write)


def test_a_stream_without_a_descriptor_is_left_as_it_is():
    text = io.StringIO()
    assert front._reader_may_go(text) is text
