"""A config change that alters what already-sent messages look like (the tag list, "auto",
min_bytes): `status` and `apply` say what it costs on each layer, and the watcher's hands leave it
to `apply` (a change of other settings, or of senpi-guard's own code, they still make)."""

from __future__ import annotations

import json
import threading

import pytest
from conftest import SHAPE_REL, rows_of, run_cli, sha, write_user_config

from senpi_guard import discover
from senpi_guard.core.patch import definition
from senpi_guard.io import config as config_mod
from senpi_guard.io.store import Store
from senpi_guard.layers import pipeline
from senpi_guard.layers.dist import Reconciler

NAME = "senpi-guard-directive-dedupe.js"
PATCH = definition.load("directive-dedupe")


def apply_json(capsys, *args):
    code, out, err = run_cli(capsys, "apply", *args, "--json")
    return code, json.loads(out), err


def test_status_and_apply_say_what_a_tag_change_costs(npm_install, capsys, isolated_dirs):
    pkg = npm_install(3)
    assert apply_json(capsys, "--root", pkg)[0] == 0
    write_user_config(isolated_dirs, '[patches.directive-dedupe]\ntags = "auto"\n')
    _, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    (row,) = json.loads(out)["installs"]
    assert row["state"] == "stale" and row["layers"]["extension"] == "stale"
    assert "misses the prompt cache once" in row["detail"]
    assert "re-sends its whole context once" in row["extension"]["detail"]
    assert "tags 6 tags -> auto (10 known tags, any other from 512 bytes)" in row["extension"]["detail"]

    code, doc, err = apply_json(capsys, "--root", pkg, "--dry-run")
    assert code == 0, err
    assert "misses the prompt cache once" in rows_of(doc)[0]["detail"]
    code, doc, err = apply_json(capsys, "--root", pkg)
    assert code == 0, err
    assert "misses the prompt cache once" in rows_of(doc)[0]["detail"]
    assert "re-sends its whole context once" in doc["extension"][0]["detail"]
    assert '"tags":"auto"' in (isolated_dirs / "agent" / "extensions" / NAME).read_text()

    write_user_config(isolated_dirs, '[patches.directive-dedupe]\ntags = "auto"\nmin_bytes = 2048\n')
    code, doc, _ = apply_json(capsys, "--root", pkg)
    assert code == 0 and "min_bytes 512 -> 2048" in doc["extension"][0]["detail"]
    write_user_config(isolated_dirs, '[patches.directive-dedupe]\ntags = ["ultrawork-mode", "omo-senpi-ulw-execute"]\n')
    code, doc, _ = apply_json(capsys, "--root", pkg)
    assert (
        code == 0
        and "tags auto (10 known tags, any other from 2048 bytes) -> ultrawork-mode, omo-senpi-ulw-execute"
        in doc["extension"][0]["detail"]
    )
    write_user_config(isolated_dirs, '[patches.directive-dedupe]\ntags = ["ultrawork-mode"]\n')
    code, doc, _ = apply_json(capsys, "--root", pkg)
    assert code == 0 and "tags -omo-senpi-ulw-execute" in doc["extension"][0]["detail"]


def test_a_change_that_reshapes_nothing_costs_nothing(npm_install, capsys, isolated_dirs):
    pkg = npm_install(3)
    write_user_config(isolated_dirs, "[patches.directive-dedupe]\nmin_bytes = 100\n")  # (a list: unused)
    code, doc, err = apply_json(capsys, "--root", pkg)
    assert code == 0, err
    write_user_config(isolated_dirs, "")
    code, doc, _ = apply_json(capsys, "--root", pkg)
    assert code == 0 and rows_of(doc)[0]["changed"] == []  # the rendered code is the same
    assert "cache" not in rows_of(doc)[0]["detail"]


def test_the_watchers_hands_leave_a_tag_change_to_apply(npm_install, capsys, isolated_dirs):
    pkg = npm_install(3)
    assert apply_json(capsys, "--root", pkg)[0] == 0
    extension = isolated_dirs / "agent" / "extensions" / NAME
    target = pkg / SHAPE_REL[3]
    before = (sha(target), extension.read_bytes())
    write_user_config(isolated_dirs, '[patches.directive-dedupe]\ntags = "auto"\n')
    config = config_mod.load()
    install = discover.describe(pkg)

    keeping = pipeline.Keeping()  # (what the watcher carries from one round to the next)

    def watchers_round() -> list:  # (the layers' `keep` step, as the watcher runs it)
        flow = pipeline.build([PATCH], config, Store(), cancel=threading.Event())
        run = pipeline.Run(keeping=keeping)
        return [result for layer in flow.layers for result in layer.keep([install], run)]

    (outcome, standing) = watchers_round()
    assert outcome.layer == "dist" and outcome.ok and outcome.changed == []
    assert outcome.detail.startswith("left as it is")
    assert standing.layer == "extension" and standing.standing and standing.detail.startswith("left as it is")
    assert (sha(target), extension.read_bytes()) == before
    (again,) = watchers_round()  # a standing problem is reported once, not on every round
    assert again.layer == "dist" and (sha(target), extension.read_bytes()) == before

    # a round that could not look at the agent dir (a record it cannot read) forgets nothing: the
    # problem still stands there, and is not reported again once the agent dir is looked at
    unreadable = Store().state_dir / "extension-taken-out.json"
    unreadable.write_text("{not json")
    (_dist, error) = watchers_round()
    assert error.after == "error" and not error.standing and "is corrupt" in error.detail, error.detail
    unreadable.unlink()
    assert [r.layer for r in watchers_round()] == ["dist"]

    # gone for a round (the config as the extension was made), then back: reported again
    write_user_config(isolated_dirs, "")
    config = config_mod.load()
    assert [r.layer for r in watchers_round()] == ["dist"]
    write_user_config(isolated_dirs, '[patches.directive-dedupe]\ntags = "auto"\n')
    config = config_mod.load()
    (_dist, back) = watchers_round()
    assert back.standing and back.detail.startswith("left as it is") and back.detail == standing.detail

    # the same hands do make a change that leaves sent messages alone: here, the extension removed
    extension.unlink()
    (_dist, installed) = watchers_round()
    assert installed.ok and installed.after == "installed", installed.detail
    assert '"tags":"auto"' in extension.read_text()
    flow = pipeline.build([PATCH], config, Store())
    (outcome,) = flow.run("apply", [install], pipeline.Run())[:1]  # (apply's path)
    assert outcome.ok and outcome.changed and sha(target) != before[0]


def test_the_replay_catches_an_auto_payload_that_drops_a_first_copy(
    npm_install, capsys, isolated_dirs, tmp_path, monkeypatch
):
    """The patch's own checks see markers of any tag name under "auto" (the any-tag fixture): a
    payload that collapses the first copy of an unlisted block fails verification."""
    import shutil

    copy = tmp_path / "patches"
    shutil.copytree(definition.patches_root(), copy)
    payload = copy / "directive-dedupe" / "dedupe.js"
    good = "if (span.first || __senpiGuardSeen(seen, body)) {"
    assert good in payload.read_text()
    payload.write_text(
        payload.read_text().replace(
            good, 'if (span.first || __senpiGuardSeen(seen, body) || span.tag === "team-notes") {'
        )
    )
    monkeypatch.setattr(definition, "patches_root", lambda: copy)
    pkg = npm_install(3)
    write_user_config(isolated_dirs, '[patches.directive-dedupe]\ntags = "auto"\n')
    code, doc, _ = apply_json(capsys, "--root", pkg, "--dry-run")
    (row,) = rows_of(doc)
    assert code != 0 and row["state"] == "unpatched"
    assert "only-repeats-replaced failed on fixture any-tag: the first copy of a <team-notes> span" in row["detail"]
    write_user_config(isolated_dirs, "")  # a list: the sabotaged line never runs for team-notes
    code, doc, err = apply_json(capsys, "--root", pkg, "--dry-run")
    assert code == 0, err


DEFAULT_TAGS = list(PATCH.settings_schema[0].default)


def test_a_reordered_tag_list_is_no_reshape(npm_install, capsys, isolated_dirs):
    """The dedupe treats the tags as a set: another order changes no sent text, so it costs nothing
    and the watcher's hands re-render it."""
    pkg = npm_install(3)
    assert apply_json(capsys, "--root", pkg)[0] == 0
    write_user_config(isolated_dirs, f"[patches.directive-dedupe]\ntags = {json.dumps(DEFAULT_TAGS[::-1])}\n")
    _, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    (row,) = json.loads(out)["installs"]
    assert row["state"] == "stale" and "earlier messages" not in row["detail"] + row["extension"]["detail"]
    outcome = Reconciler(PATCH, config_mod.load(), Store()).reconcile(discover.describe(pkg), keep_reshapes=True)
    assert outcome.ok and outcome.changed and not outcome.detail.startswith("left as it is")


def test_handing_a_patched_install_to_upstream_is_left_to_apply_and_costed(npm_install, capsys, isolated_dirs):
    pkg = npm_install(3)
    assert apply_json(capsys, "--root", pkg)[0] == 0
    target = pkg / SHAPE_REL[3]
    before = sha(target)
    write_user_config(isolated_dirs, '[patches.directive-dedupe]\nupstream_dedupe = "defer"\n')
    outcome = Reconciler(PATCH, config_mod.load(), Store()).reconcile(discover.describe(pkg), keep_reshapes=True)
    assert outcome.ok and outcome.changed == [] and sha(target) == before
    assert outcome.detail.startswith("left as it is") and "misses the prompt cache once" in outcome.detail
    code, doc, err = apply_json(capsys, "--root", pkg)
    assert code == 0, err
    (row,) = rows_of(doc)
    assert row["changed"] and "keep-last" in row["detail"] and "misses the prompt cache once" in row["detail"]


def test_a_dry_run_where_the_config_keeps_the_extension_out_takes_nothing_out(npm_install, capsys, isolated_dirs):
    """upstream_dedupe = "defer" keeps the extension out of an agent dir whose senpi has its own
    keep-last: apply takes it out, a dry run only says it would (measured before: the dry run
    took it out)."""
    pkg = npm_install(3)
    assert apply_json(capsys, "--root", pkg)[0] == 0
    installed = isolated_dirs / "agent" / "extensions" / PATCH.extension.file_name
    assert installed.is_file()
    write_user_config(isolated_dirs, '[patches.directive-dedupe]\nupstream_dedupe = "defer"\n')
    code, doc, err = apply_json(capsys, "--root", pkg, "--dry-run")
    (layer,) = doc["extension"]
    assert code == 0 and installed.is_file(), err
    assert layer["would_write"] and "would take senpi-guard's extension out" in layer["detail"]
    code, doc, err = apply_json(capsys, "--root", pkg)
    assert code == 0 and not installed.exists(), err


@pytest.mark.parametrize(
    "literal",
    ['{"tags":"auto","known":5}', '{"tags":[1,2]}', "[" * 100_000 + "]" * 100_000, '{"tags":"everything"}', "not json"],
)
def test_a_config_literal_this_version_cannot_read_is_no_reshape(literal):
    from senpi_guard.core.patch import reshape

    data = f"x /*senpi-guard:config*/{literal}/*senpi-guard:config-end*/ y".encode()
    slot = reshape.slot_in(data)  # (a JSON object is read back; what its values mean, the patch's schema says)
    assert slot is None or isinstance(slot, dict)
    assert reshape.change(PATCH, slot, config_mod.Config()) is None
