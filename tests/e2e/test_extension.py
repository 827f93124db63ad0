"""The extension layer: installed by apply into the agent's extensions/ (proven first, through the
installed senpi's own extension runner when it has one), shown by status, removed by revert, chosen
by `layers`; never touching a file that is not senpi-guard's."""

import json
import subprocess
import textwrap
from pathlib import Path

from conftest import HANG_S, run_cli, write_user_config

from senpi_guard.core.patch import definition

PATCH = definition.load("directive-dedupe")
NAME = PATCH.extension.file_name


def apply_json(capsys, *args):
    code, out, err = run_cli(capsys, "apply", "--json", *args)
    return code, json.loads(out), err


def status_row(capsys, pkg):
    _, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    (row,) = json.loads(out)["installs"]
    return row


def test_apply_installs_it_through_senpis_own_runner(npm_install, capsys, isolated_dirs):
    pkg = npm_install(3)
    extensions = isolated_dirs / "agent" / "extensions"
    extensions.mkdir(parents=True)
    (extensions / "tps.js").write_text("export { default } from '/somewhere/tps.js';\n")  # senpi's own stub
    code, doc, err = apply_json(capsys, "--root", pkg)
    assert code == 0, err
    (layer,) = doc["extension"]  # one agent dir, shared by every install that uses it
    assert (layer["state_before"], layer["state"], layer["ok"]) == ("absent", "installed", True)
    assert "through senpi's own extension runner" in layer["detail"]
    installed = extensions / NAME
    first_line = installed.read_text().splitlines()[0]
    assert first_line.startswith(f"// senpi-guard: directive-dedupe v{PATCH.version} layer=extension config-sha256=")
    assert (extensions / "tps.js").read_text() == "export { default } from '/somewhere/tps.js';\n"
    row = status_row(capsys, pkg)
    assert row["layers"] == {"dist": "patched", "extension": "installed"}
    assert run_cli(capsys, "status", "--root", pkg)[0] == 0
    # it works where senpi loads it: a node process imports it and runs its handler
    script = textwrap.dedent(f"""
        const ext = await import({json.dumps(installed.as_uri())});
        let handler; ext.default({{ on: (e, h) => {{ handler = h; }} }});
        const u = "<ultrawork-mode>" + "x".repeat(500) + "</ultrawork-mode>";
        const msgs = [1, 2].map((n) => ({{ role: "user", content: [{{ type: "text", text: u + n }}] }}));
        const out = handler({{ type: "context", messages: msgs }}).messages;
        console.log(JSON.stringify([out[0] === msgs[0], out[1].content[0].text.startsWith("[ultrawork-mode:")]));
    """)
    result = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == [True, True]


def test_without_senpis_runner_a_minimal_host_proves_it(tmp_path, capsys, isolated_dirs):
    from senpi_guard.demo import sample

    pkg = tmp_path / "pkg"
    sample.write_sample_package(pkg, 2, fillers=0)
    for name in ("runner.js", "loader.js"):
        (pkg / "dist" / "core" / "extensions" / name).unlink()
    code, doc, err = apply_json(capsys, "--root", pkg)
    assert code == 0, err
    assert "through a minimal host" in doc["extension"][0]["detail"]
    assert "(senpi's own runner was not found: no one file under dist/ defines" in doc["extension"][0]["detail"]


def test_stale_modified_and_revert_keeps_an_edited_one(npm_install, capsys, isolated_dirs):
    pkg = npm_install(2)
    assert apply_json(capsys, "--root", pkg)[0] == 0
    installed = isolated_dirs / "agent" / "extensions" / NAME
    write_user_config(isolated_dirs, 'tags = ["ultrawork-mode"]\n')
    assert status_row(capsys, pkg)["layers"]["extension"] == "stale"
    code, doc, _ = apply_json(capsys, "--root", pkg)
    (layer,) = doc["extension"]
    assert code == 0 and (layer["state_before"], layer["state"]) == ("stale", "installed")
    assert '"tags":["ultrawork-mode"]' in installed.read_text()
    installed.write_text(installed.read_text() + "\n// my own note\n")
    row = status_row(capsys, pkg)
    assert row["layers"]["extension"] == "modified" and "edited" in row["extension"]["detail"]
    code, out, _ = run_cli(capsys, "revert", "--root", pkg, "--json")
    (layer,) = json.loads(out)["extension"]
    assert code == 0 and (layer["state_before"], layer["state"]) == ("modified", "absent")
    assert not installed.exists()
    (kept,) = layer["kept"]
    assert kept.endswith(NAME) and "// my own note" in Path(kept).read_text()
    assert status_row(capsys, pkg)["layers"]["extension"] == "held"  # (taken out by the revert, held until apply)


def test_a_file_that_is_not_ours_is_never_touched(npm_install, capsys, isolated_dirs):
    pkg = npm_install(2)
    theirs = isolated_dirs / "agent" / "extensions" / NAME
    theirs.parent.mkdir(parents=True)
    theirs.write_text("export default function mine(pi) {}\n")
    code, doc, _ = apply_json(capsys, "--root", pkg)
    (layer,) = doc["extension"]
    assert code == 1 and layer["state"] == "foreign"
    assert "never changes it" in layer["detail"]
    assert doc["installs"][0]["state"] == "patched"  # the dist layer was still done
    run_cli(capsys, "revert", "--root", pkg)
    assert theirs.read_text() == "export default function mine(pi) {}\n"


def test_layers_config_chooses(npm_install, capsys, isolated_dirs):
    pkg = npm_install(2)
    write_user_config(isolated_dirs, 'layers = ["extension"]\n')
    code, doc, err = apply_json(capsys, "--root", pkg)
    assert code == 0, err
    assert doc["installs"] == [] and [layer["state"] for layer in doc["extension"]] == ["installed"]
    assert status_row(capsys, pkg)["layers"] == {"dist": "unpatched", "extension": "installed"}
    write_user_config(isolated_dirs, 'layers = ["dist"]\n')
    code, doc, _ = apply_json(capsys, "--root", pkg)
    assert code == 0 and doc["extension"] == [] and doc["installs"][0]["state"] == "patched"
    write_user_config(isolated_dirs, 'layers = ["dist", "everything"]\n')
    code, _, err = run_cli(capsys, "apply", "--root", pkg)
    assert code == 1 and "'layers'" in err and len(err.strip().splitlines()) == 1


def test_a_failed_replay_writes_nothing(npm_install, capsys, isolated_dirs, monkeypatch):
    pkg = npm_install(2)
    import dataclasses

    from senpi_guard.commands import common

    real = common.load

    def load():
        patches, config = real()

        def broken(patch):
            if patch.extension is None:
                return patch
            layer = dataclasses.replace(
                patch.extension,
                source=patch.extension.source.replace(
                    "const text = dedupe(message.content);", "const text = dedupe(message.content) + ' ';"
                ),
            )
            return dataclasses.replace(patch, extension=layer)

        return [broken(p) for p in patches], config

    monkeypatch.setattr(common, "load", load)
    code, doc, _ = apply_json(capsys, "--root", pkg)
    (layer,) = doc["extension"]
    assert code == 1 and layer["state"] == "absent"
    assert "verification failed, nothing was written" in layer["detail"]
    assert not (isolated_dirs / "agent" / "extensions" / NAME).exists()


def test_an_unusable_extensions_folder_is_one_line_and_the_dist_layer_is_still_done(npm_install, capsys, isolated_dirs):
    pkg = npm_install(2)
    (isolated_dirs / "agent").mkdir()
    (isolated_dirs / "agent" / "extensions").write_text("not a folder")
    code, out, err = run_cli(capsys, "apply", "--root", pkg)
    assert code == 1
    errors = [line for line in out.splitlines() if "error:" in line]
    assert len(errors) == 1 and "extensions" in errors[0] and "Traceback" not in out + err
    assert status_row(capsys, pkg)["layers"] == {"dist": "patched", "extension": "error"}
    code, out, _ = run_cli(capsys, "revert", "--root", pkg)
    assert code == 1 and "restored" in out


def test_extension_only_status_agrees_with_apply(npm_install, capsys, isolated_dirs):
    """layers = ["extension"]: dist/ stays as installed, and that is what the user asked for; status
    says "run apply" only while the extension is not there."""
    pkg = npm_install(2)
    write_user_config(isolated_dirs, 'layers = ["extension"]\n')
    installed = isolated_dirs / "agent" / "extensions" / NAME
    code, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    (row,) = json.loads(out)["installs"]
    assert code == 1 and "installs the extension layer" in row["next"]
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0 and installed.is_file()
    code, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    (row,) = json.loads(out)["installs"]
    assert code == 0 and row["state"] == "unpatched" and row["as_wanted"] and row["next"] is None
    installed.unlink()
    assert run_cli(capsys, "status", "--root", pkg)[0] == 1


def test_a_fifo_at_the_extension_path_hangs_nothing(npm_install, isolated_dirs):
    """No writer ever opens this FIFO: reading it would block forever (apply holding the lock)."""
    import os
    import sys

    pkg = npm_install(2)
    extensions = isolated_dirs / "agent" / "extensions"
    extensions.mkdir(parents=True)
    fifo = extensions / NAME
    os.mkfifo(fifo)
    for command in ("status", "apply", "verify", "revert"):
        done = subprocess.run(
            [sys.executable, "-m", "senpi_guard", command, "--root", str(pkg)],
            capture_output=True,
            text=True,
            timeout=HANG_S,
        )
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        assert "not a regular file" in done.stdout + done.stderr, (command, done.stdout)
    assert fifo.is_fifo()


def test_a_killed_extension_replay_leaves_nothing_for_long(npm_install, capsys, isolated_dirs):
    """What a kill -9 during the extension's replay leaves (its folder, of a pid now gone) goes at the
    next extension replay, with no dist replay to sweep first."""
    pkg = npm_install(2)
    write_user_config(isolated_dirs, 'layers = ["extension"]\n')
    verify_dir = isolated_dirs / "xdg_state_home" / "senpi-guard" / "verify"
    left = verify_dir / "senpi-guard-verify-999999999-ext-0badc0de"
    (left / "node_modules").mkdir(parents=True)
    (left / "extension-checks.mjs").write_text("// left by a killed run\n")
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    assert not left.exists()


def test_an_extension_switched_off_in_senpi_config_is_not_as_wanted(npm_install, capsys, isolated_dirs):
    """`senpi config`, unticking senpi-guard's extension, writes `-extensions/<file>` into the agent
    dir's settings (dist/modes/interactive/components/config-selector.js, toggleTopLevelResource):
    senpi then loads it none of the time (measured on 2026.8.22-2 by a hostile pass). status,
    verify and apply say so and what to do, where they said "installed (ok)"; the file is kept."""
    pkg = npm_install(3)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    agent = isolated_dirs / "agent"
    installed = agent / "extensions" / "senpi-guard-directive-dedupe.js"
    (agent / "settings.json").write_text(json.dumps({"extensions": ["-extensions/senpi-guard-directive-dedupe.js"]}))
    code, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    (row,) = [p for r in json.loads(out)["installs"] for p in r["patches"] if p["patch"] == "directive-dedupe"]
    assert code == 1 and not row["as_wanted"] and row["next"].startswith("tick senpi-guard's extension again"), out
    assert "switch it off, so senpi loads none of it" in row["extension"]["detail"]
    assert run_cli(capsys, "verify", "--root", pkg)[0] == 1
    code, out, _ = run_cli(capsys, "apply", "--root", pkg, "--json")
    (layer,) = json.loads(out)["extension"]
    assert code == 1 and not layer["ok"] and installed.is_file(), out
    (agent / "settings.json").write_text(json.dumps({"extensions": ["+extensions/senpi-guard-directive-dedupe.js"]}))
    assert run_cli(capsys, "status", "--root", pkg)[0] == 0
