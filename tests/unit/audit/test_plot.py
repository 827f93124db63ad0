"""audit/plot: --plot refuses a file name that is neither .png nor .svg, and says how to get
matplotlib when it is missing, before any auditing; it writes the image (its folder made when
missing, an earlier one or a link in its place replaced, a link never followed) titled with the
session's figures, a money panel in dollars when every call is priced and in tokens otherwise.
No pixel is compared: an SVG's words are text, read back as such."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from senpi_guard.audit import plot
from senpi_guard.errors import FatalError

pytest.importorskip("matplotlib")


def report(*, money: bool = False, priced: bool = True, more: bool = False, same: bool = False) -> dict[str, Any]:
    """What audit_session reports, cut to what the plot reads: 6 calls of a session."""
    installed = [10_000, 20_000, 30_000, 40_000, 50_000, 60_000]
    both = [10_000, 12_000, 14_000, 16_000, 18_000, 20_000]
    if more:
        both = [n + 5_000 for n in installed]
    layers = {"installed": installed, "dist": installed if same else both, "extension": both, "both": both}
    summary: dict[str, Any] = {
        "turns": 6,
        "headline": {"turns": 4, "saved_bytes": -20_000 if more else 110_000, "saved_percent": -9 if more else 52},
        "context_window_tokens": 12_000,
        "first_turn_over_window_unpatched": 4,
    }
    out: dict[str, Any] = {"session": "/home/u/sessions/abc.jsonl", "summary": summary, "series_by_layers": layers}
    if money:
        summary["money"] = {"calls": 6, "usd": 1.5 if priced else None, "usd_calls": 6 if priced else 0}
        per = {config: [n / 4 for n in series] for config, series in layers.items()}
        out["money_series"] = {"tokens": per, "usd": {c: [n / 1e6 for n in s] for c, s in per.items()}}
    return out


def svg_text(tmp_path: Path, data: dict[str, Any]) -> str:
    out = tmp_path / "plots" / "bytes.svg"
    plot.draw(data, out)
    return out.read_text()


@pytest.mark.parametrize("name", ["bytes.jpg", "bytes", "bytes.png.txt"])
def test_a_file_name_other_than_png_or_svg_is_refused(tmp_path, name):
    with pytest.raises(FatalError, match=r"use a \.png or \.svg file name") as caught:
        plot.check(tmp_path / name)
    assert name in str(caught.value) and "\n" not in str(caught.value)


def test_either_case_of_the_suffix_is_taken(tmp_path):
    plot.check(tmp_path / "a.PNG")
    plot.check(tmp_path / "a.Svg")


def test_without_matplotlib_it_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # (as if it were not installed)
    with pytest.raises(FatalError, match="--plot needs matplotlib") as caught:
        plot.check(tmp_path / "a.png")
    assert "pipx inject senpi-guard matplotlib" in str(caught.value)
    with pytest.raises(FatalError, match="needs matplotlib"):
        plot.draw(report(), tmp_path / "a.png")
    assert not (tmp_path / "a.png").exists()


def test_a_refused_name_writes_nothing(tmp_path):
    with pytest.raises(FatalError):
        plot.draw(report(), tmp_path / "out" / "bytes.gif")
    assert not (tmp_path / "out").exists()


def test_a_png_is_written_into_a_folder_made_for_it(tmp_path):
    out = tmp_path / "new" / "deeper" / "bytes.png"
    plot.draw(report(money=True), out)
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert [p.name for p in out.parent.iterdir()] == ["bytes.png"]  # (no temp file left beside it)


def test_the_title_gives_the_session_its_calls_and_what_was_saved(tmp_path):
    text = svg_text(tmp_path, report(same=True))
    assert "abc.jsonl: 6 calls; over 4 full re-sends" in text and "saved, 52%" in text
    assert "/home/u/sessions" not in text  # (the file's name, not where it is)
    assert "senpi as installed" in text and "with senpi-guard (both layers)" in text
    assert "not sent with senpi-guard (repeated directive copies)" in text
    assert "context window ≈ 12,000 tokens (bytes/4)" in text
    assert "call 4: over the window as installed" in text
    assert "≈ $ at API list price" not in text and "tokens, cumulative" not in text  # (no money panel)
    # a layer that repeats another says which (its line lies under that one)
    assert "dist layer only (same as senpi as installed)" in text
    assert "extension layer only (same as with senpi-guard (both layers))" in text


def test_more_bytes_with_senpi_guard_are_said_and_shaded_as_such(tmp_path):
    text = svg_text(tmp_path, report(more=True))
    assert "more (the directives senpi as installed drops), 9%" in text
    assert "sent more with senpi-guard (directives senpi as installed dropped)" in text
    assert "not sent with senpi-guard" not in text


def test_the_money_panel_is_in_dollars_only_when_every_call_is_priced(tmp_path):
    assert "≈ $ at API list price, cumulative" in svg_text(tmp_path / "a", report(money=True))
    text = svg_text(tmp_path / "b", report(money=True, priced=False))
    assert "tokens, cumulative" in text and "no list price paid" in text and "≈ $" not in text


def test_an_older_report_of_two_series_is_drawn_as_installed_and_patched(tmp_path):
    older = report()
    del older["series_by_layers"]
    older["series"] = ([10_000, 20_000, 30_000], [10_000, 11_000, 12_000])
    older["summary"].pop("context_window_tokens")
    older["summary"]["first_turn_over_window_unpatched"] = None
    text = svg_text(tmp_path, older)
    assert "senpi as installed" in text and "with senpi-guard" in text and "both layers" not in text
    assert "context window" not in text and "over the window" not in text


def test_an_earlier_image_or_a_link_in_its_place_is_replaced_and_a_link_never_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere.png"
    elsewhere.write_text("not to be touched\n")
    out = tmp_path / "bytes.png"
    out.symlink_to(elsewhere)
    plot.draw(report(), out)
    assert not out.is_symlink() and out.read_bytes().startswith(b"\x89PNG")
    assert elsewhere.read_text() == "not to be touched\n"
    out.write_bytes(b"an earlier plot")
    plot.draw(report(), out)  # (audit --plot run again)
    assert out.read_bytes().startswith(b"\x89PNG")
