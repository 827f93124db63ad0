class FatalError(Exception):
    """A problem the user must act on. The message is one line: what, where, what to do next."""


class NeedsFix(FatalError):
    """A refusal with the one command that removes its cause (`fix`): the step that was refused
    runs once that command has (a next step is built from `fix`, never read out of the message)."""

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.fix = fix


def fix_of(exc: BaseException) -> str:
    """The command that removes the cause of a refusal ("" when it names none)."""
    return exc.fix if isinstance(exc, NeedsFix) else ""


class Passing(FatalError):
    """A failure that passes on its own: node ran out of time on a busy machine (a full disk is the
    other such cause, known by its errno). Worth trying again later; never held against the bytes."""


class UsageError(FatalError):
    """Bad command-line usage (exit code 2)."""
