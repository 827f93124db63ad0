"""commands/uninstall's removal of its data folder around the files a user edited that it kept."""

from __future__ import annotations

import os

from senpi_guard.commands.uninstall import _remove_all_but


def test_everything_but_the_kept_files_goes_and_no_link_is_followed(tmp_path):
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "precious").write_text("not ours")
    data = tmp_path / "data" / "senpi-guard"
    kept = data / "backups" / "k" / "v" / "drifted" / "abc.drifted"
    kept.parent.mkdir(parents=True)
    kept.write_text("your edit")
    (data / "backups" / "k" / "v" / "prompt-bridge.js.orig").write_text("a backup")
    (data / "extension-kept").mkdir()
    (data / "replays.json").write_text("{}")
    os.symlink(outside, data / "backups" / "link-to-outside")  # (a folder link: taken away, never walked)
    os.symlink(outside / "deep" / "precious", data / "file-link")
    _remove_all_but(data, {kept})
    left = sorted(str(p.relative_to(data)) for p in data.rglob("*"))
    assert left == ["backups", "backups/k", "backups/k/v", "backups/k/v/drifted", "backups/k/v/drifted/abc.drifted"]
    assert (outside / "deep" / "precious").read_text() == "not ours"
