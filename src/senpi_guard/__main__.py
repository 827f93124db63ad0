"""The front door: `senpi-guard` and `python -m senpi_guard` go to the command line (cli), writing
through standard streams that let their reader go away early (`senpi-guard status --json | head -1`)."""

import io
import os
import sys


class _ReaderMayGo(io.RawIOBase):
    """A standard stream's file descriptor that, once its reader has gone (EPIPE), is pointed at
    /dev/null and takes every later write there: the command ends its work quietly with its own exit
    code, and Python's flush at exit finds nothing to fail on (its docs' "Note on SIGPIPE")."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data) -> int:
        try:
            return os.write(self._fd, data)
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._fd)
            os.close(devnull)
            return len(data)


def _reader_may_go(stream):
    """`stream` (sys.stdout or sys.stderr) again, over _ReaderMayGo; as it was without a descriptor."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # (None when closed at start; io.UnsupportedOperation)
        return stream
    stream.flush()
    return io.TextIOWrapper(
        io.BufferedWriter(_ReaderMayGo(fd)),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=stream.line_buffering,
        write_through=stream.write_through,
    )


def main() -> int:
    sys.stdout = _reader_may_go(sys.stdout)
    sys.stderr = _reader_may_go(sys.stderr)
    from senpi_guard.cli import main as cli_main

    return cli_main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
