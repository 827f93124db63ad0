"""diffview.py directly: a dry run's diff shows a window around each change of a long compiled line,
never the whole line, and marks invisible characters."""

from __future__ import annotations

from senpi_guard.diffview import visible, window_diff


def test_a_long_line_is_shown_as_a_window_around_the_change():
    old = b"x" * 5000 + b"return blocks;" + b"y" * 5000 + b"\n"
    new = b"x" * 5000 + b"return __senpiGuardDedupe(blocks);" + b"y" * 5000 + b"\n"
    diff = window_diff("dist/a.js", old, new)
    assert "__senpiGuardDedupe(blocks)" in diff and "dist/a.js" in diff
    assert all(len(line) < 400 for line in diff.splitlines())


def test_no_change_no_diff_and_control_characters_are_visible():
    assert window_diff("a.js", b"same\n", b"same\n") == ""
    assert visible("a\x1b[2Jb") == "a\\x1b[2Jb" and visible("a\tb") == "a\tb"  # (a tab stays a tab)


def test_whole_keeps_every_line_as_it_is():
    old = b"x" * 5000 + b"return blocks;" + b"y" * 5000 + b"\n"
    new = b"x" * 5000 + b"return __senpiGuardDedupe(blocks);" + b"y" * 5000 + b"\n"
    lines = window_diff("dist/a.js", old, new, whole=True).splitlines()
    assert "-" + old.decode().rstrip("\n") in lines and "+" + new.decode().rstrip("\n") in lines
    assert "…" not in "".join(lines)
