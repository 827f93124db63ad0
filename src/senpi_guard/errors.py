class FatalError(Exception):
    """A problem the user must act on. The message is one line: what, where, what to do next."""


class UsageError(FatalError):
    """Bad command-line usage (exit code 2)."""
