"""Text another user controls (a package.json's version, a path, a message quoting them), made safe
to show: every control character (C0, DEL, C1: an escape sequence, a carriage return, a newline that
would forge a line) and every lone surrogate (valid JSON, but no UTF-8 can encode it) is written out
as its escape, so a terminal, a log line or a metrics label shows it instead of obeying it."""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match[0]
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def visible(text: object) -> str:
    """`text` (str() of it) with its control characters and lone surrogates escaped (`\\x1b`,
    `\\r`, `\\ud800`); anything else, backslashes included, as it is."""
    return _UNSAFE.sub(_escape, str(text))
