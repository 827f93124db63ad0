"""The extension layer as a senpi package: `export` writes it (refusing a folder that is not empty and
not an earlier export), status shows a package an agent dir's settings list as that dir's extension
layer, apply installs no second copy beside it, revert leaves it to the user; and the package's
start-up check, run by node over a real install of the sample package, stands aside on the Claude
provider exactly where senpi has its own keep-last dedupe and no dist layer."""

import json
import os
import subprocess
import textwrap
from pathlib import Path

from conftest import run_cli, tree_digest, write_user_config

from senpi_guard.core.patch import definition
from senpi_guard.io import config as config_mod
from senpi_guard.layers import package as package_layer

PATCH = definition.load("directive-dedupe")
NAME = PATCH.extension.file_name


def export_json(capsys, folder: Path, *args) -> tuple[int, dict, str]:
    code, out, err = run_cli(capsys, "export", folder, "--json", *args)
    return code, json.loads(out), err


def listed(agent_dir: Path, *sources: str | dict) -> None:
    """The agent dir's settings.json as `senpi install` leaves it."""
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "settings.json").write_text(json.dumps({"packages": list(sources)}, indent=2))


def test_export_writes_a_package_senpi_can_load(tmp_path, capsys):
    folder = tmp_path / "pkg"
    code, doc, err = export_json(capsys, folder)
    assert code == 0, err
    assert doc == {"package_dir": str(folder), "patch": "directive-dedupe", "version": PATCH.version, "changed": True}
    assert sorted(p.name for p in folder.iterdir()) == sorted(["package.json", "index.js", NAME])
    manifest = json.loads((folder / "package.json").read_text())
    assert manifest["pi"] == {"extensions": ["./index.js"]}  # the key senpi's readPiManifest reads
    assert manifest["senpi-guard"]["patch"] == "directive-dedupe" and manifest["type"] == "module"
    # the extension file is byte for byte what apply installs
    assert (folder / NAME).read_text() == PATCH.render_extension(config_mod.load())
    for script in ("index.js", NAME):
        subprocess.run(["node", "--check", str(folder / script)], check=True, capture_output=True)
    assert f'from "./{NAME}"' in (folder / "index.js").read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".pkg.")]  # (no temp folder left)


def test_export_again_replaces_an_earlier_export_only(tmp_path, capsys, isolated_dirs):
    folder = tmp_path / "pkg"
    assert export_json(capsys, folder)[0] == 0
    code, doc, _ = export_json(capsys, folder)
    assert code == 0 and doc["changed"] is False
    write_user_config(isolated_dirs, 'tags = ["ultrawork-mode"]\n')
    before = (folder / NAME).read_bytes()
    code, doc, _ = export_json(capsys, folder)
    assert code == 0 and doc["changed"] is True and (folder / NAME).read_bytes() != before
    assert '"ultrawork-mode"' in (folder / NAME).read_text()
    # a file of the user's in it: refused, nothing changed
    (folder / "notes.txt").write_text("mine")
    kept = tree_digest(folder)
    code, _, err = run_cli(capsys, "export", folder)
    assert code == 1 and "notes.txt" in err and len(err.strip().splitlines()) == 1
    assert tree_digest(folder) == kept


def test_export_refuses_a_folder_that_is_not_an_earlier_export(tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / "package.json").write_text('{"name": "someone-elses"}\n')
    kept = tree_digest(other)
    code, out, err = run_cli(capsys, "export", other)
    assert code == 1 and out == ""
    assert err.strip() == (
        f"senpi-guard: error: {other} is not empty and not an earlier `senpi-guard export`; name a new or empty folder"
    )
    assert tree_digest(other) == kept
    file = tmp_path / "a-file"
    file.write_text("x")
    code, _, err = run_cli(capsys, "export", file)
    assert code == 1 and "is not a folder" in err and file.read_text() == "x"
    code, out, _ = run_cli(capsys, "export", other, "--json")
    assert code == 1 and json.loads(out)["error"].startswith(f"{other} is not empty")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_cli(capsys, "export", empty)[0] == 0 and (empty / "package.json").is_file()


def test_an_upgrade_alone_leaves_an_export_current_and_a_missing_file_is_written_again(
    npm_install, tmp_path, capsys, isolated_dirs
):
    """The version of senpi-guard that exported a package is in its package.json, but nothing
    senpi loads depends on it (a hostile pass: every upgrade made each export "not as wanted").
    A file missing from an export is no edit: status says it is missing, export writes it again
    (before: status said "edited, run export", and export refused)."""
    pkg, _agent, folder = applied_beside_a_package(npm_install, capsys, isolated_dirs)
    manifest = json.loads((folder / "package.json").read_text())
    manifest["senpi-guard"]["exported-by"] = "0.0.1"
    (folder / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    assert run_cli(capsys, "status", "--root", pkg)[0] == 0
    (folder / "index.js").unlink()
    code, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    (row,) = [p for r in json.loads(out)["installs"] for p in r["patches"] if p["patch"] == "directive-dedupe"]
    assert code == 1 and "its index.js missing (export writes them again)" in row["extension"]["detail"], out
    assert run_cli(capsys, "export", folder)[0] == 0 and (folder / "index.js").is_file()
    assert run_cli(capsys, "status", "--root", pkg)[0] == 0


def test_a_package_switched_off_leaves_senpi_guards_own_file_as_the_layer(npm_install, tmp_path, capsys, isolated_dirs):
    """Its settings entry switches the package's index.js off (`senpi config`): senpi loads none
    of it, so apply installs senpi-guard's own file and keeps it (a hostile pass: apply took out
    the one file senpi still loaded, and said "package (FAILED)")."""
    pkg, agent, _folder = applied_beside_a_package(npm_install, capsys, isolated_dirs)
    listed(agent, {"source": "./packages-of-mine/senpi-guard", "extensions": ["-index.js"]})
    code, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    (row,) = [p for r in json.loads(out)["installs"] for p in r["patches"] if p["patch"] == "directive-dedupe"]
    assert code == 1 and row["extension"]["state"] == "absent", out
    assert "switches its index.js off, so senpi loads none of it" in row["extension"]["detail"]
    loose = agent / "extensions" / NAME
    for _ in range(2):
        assert run_cli(capsys, "apply", "--root", pkg)[0] == 0 and loose.is_file()
    assert run_cli(capsys, "status", "--root", pkg)[0] == 0


def test_export_refuses_a_folder_senpi_would_load_unasked(tmp_path, capsys):
    """<agent dir>/extensions/<folder>: senpi loads a package there with no settings entry, beside
    senpi-guard's own file (measured on 2026.8.22-2: both ran, and status said "absent")."""
    extensions = tmp_path / "agent" / "extensions"
    linked = tmp_path / "my-exports"
    extensions.mkdir(parents=True)
    linked.symlink_to(extensions)
    # inside one, the folder itself (senpi would load it as one package, and nothing else there),
    # and one reached through a link (a hostile pass: both were written)
    for folder in (extensions / "senpi-guard-package", extensions, linked / "pkg"):
        code, _, err = run_cli(capsys, "export", folder)
        assert code == 1 and "where senpi loads a package without `senpi install`" in err, (folder, err)
    assert list(extensions.iterdir()) == []


def test_status_apply_and_revert_treat_the_package_as_the_extension_layer(npm_install, tmp_path, capsys, isolated_dirs):
    pkg = npm_install(3)
    agent = isolated_dirs / "agent"
    folder = tmp_path / "pkg"
    assert export_json(capsys, folder)[0] == 0
    listed(agent, str(folder))
    _, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    (row,) = [p for r in json.loads(out)["installs"] for p in r["patches"] if p["patch"] == "directive-dedupe"]
    assert row["extension"]["state"] == "package" and str(folder) in row["extension"]["detail"]
    assert "leaves senpi's Claude provider's calls as senpi sends them" in row["extension"]["risk"]
    code, out, err = run_cli(capsys, "apply", "--root", pkg, "--json")
    assert code == 0, out + err
    (layer,) = json.loads(out)["extension"]
    assert (layer["state"], layer["ok"], layer["path"]) == ("package", True, str(folder))
    assert not (agent / "extensions" / NAME).exists()  # no second copy beside it
    _, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    (row,) = [p for r in json.loads(out)["installs"] for p in r["patches"] if p["patch"] == "directive-dedupe"]
    assert (row["layers"], row["extension"]["risk"], row["as_wanted"]) == (
        {"dist": "patched", "extension": "package"},
        "",
        True,
    )
    kept, settings = tree_digest(folder), (agent / "settings.json").read_text()
    code, out, _ = run_cli(capsys, "revert", "--root", pkg, "--json")
    assert code == 0
    (layer,) = json.loads(out)["extension"]
    assert layer["state"] == "package" and f"senpi remove {folder}" in layer["detail"]
    assert tree_digest(folder) == kept and (agent / "settings.json").read_text() == settings


def test_uninstall_leaves_the_package_and_says_so(npm_install, tmp_path, capsys, isolated_dirs):
    pkg = npm_install(3)
    agent = isolated_dirs / "agent"
    folder = tmp_path / "pkg"
    assert export_json(capsys, folder)[0] == 0
    listed(agent, str(folder))
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    kept, settings = tree_digest(folder), (agent / "settings.json").read_text()
    code, out, err = run_cli(capsys, "uninstall", "--json")
    assert code == 0, out + err
    assert json.loads(out)["packages_left"] == [str(folder)]
    assert tree_digest(folder) == kept and (agent / "settings.json").read_text() == settings
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    code, out, _ = run_cli(capsys, "uninstall")
    assert code == 0 and f"kept      {folder}  (the senpi package carrying the extension" in out


def test_apply_takes_its_own_file_out_where_the_package_is_listed(npm_install, tmp_path, capsys, isolated_dirs):
    pkg = npm_install(3)
    agent = isolated_dirs / "agent"
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    assert (agent / "extensions" / NAME).is_file()
    folder = agent / "packages-of-mine" / "senpi-guard"
    assert export_json(capsys, folder)[0] == 0
    listed(agent, "./packages-of-mine/senpi-guard")  # (relative to the agent dir, as senpi stores it)
    code, out, err = run_cli(capsys, "apply", "--root", pkg, "--json")
    assert code == 0, out + err
    (layer,) = json.loads(out)["extension"]
    assert layer["state"] == "package" and "beside it was taken out" in layer["detail"]
    assert not (agent / "extensions" / NAME).exists()
    # a package exported for another config is shown, and export is what renders it anew (a setting
    # only the extension renders: the dist layer stays current)
    write_user_config(isolated_dirs, "[patches.directive-dedupe.budget]\nwarn_at = 0.5\n")
    _, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    (row,) = [p for r in json.loads(out)["installs"] for p in r["patches"] if p["patch"] == "directive-dedupe"]
    assert row["extension"]["state"] == "package" and not row["as_wanted"]
    assert row["next"] == f"run `senpi-guard export {folder}` (renders the package anew)"


def applied_beside_a_package(npm_install, capsys, isolated_dirs) -> tuple[Path, Path, Path]:
    """An install, a package exported into the agent dir and listed there, then apply: (the
    install, the agent dir, the package folder)."""
    pkg = npm_install(3)
    agent = isolated_dirs / "agent"
    folder = agent / "packages-of-mine" / "senpi-guard"
    assert export_json(capsys, folder)[0] == 0
    listed(agent, "./packages-of-mine/senpi-guard")
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    return pkg, agent, folder


def test_a_dry_run_beside_the_package_takes_nothing_out_and_status_flags_both_loading(
    npm_install, tmp_path, capsys, isolated_dirs
):
    """senpi-guard's own file beside a listed package: senpi loads both (each call dedupes twice and
    records two entries). status says so with the step that fixes it; `apply --dry-run` says what it
    would take out and takes out nothing (measured before: the dry run deleted the file, and status
    said "package", exit 0)."""
    pkg, agent, folder = applied_beside_a_package(npm_install, capsys, isolated_dirs)
    loose = agent / "extensions" / NAME
    loose.parent.mkdir(parents=True, exist_ok=True)
    loose.write_bytes((folder / NAME).read_bytes())  # (copied there by hand, or by an apply before the export)
    code, out, err = run_cli(capsys, "status", "--root", pkg, "--json")
    (row,) = [p for r in json.loads(out)["installs"] for p in r["patches"] if p["patch"] == "directive-dedupe"]
    assert code == 1 and not row["as_wanted"], out + err
    assert row["next"] == "run `senpi-guard apply` (takes senpi-guard's own file beside the package out)"
    code, out, err = run_cli(capsys, "apply", "--root", pkg, "--dry-run", "--json")
    (layer,) = json.loads(out)["extension"]
    assert code == 0 and loose.is_file(), out + err
    assert layer["would_write"] and "would take out" in layer["detail"] and not layer["changed"]
    code, out, err = run_cli(capsys, "apply", "--root", pkg, "--json")
    (layer,) = json.loads(out)["extension"]
    assert code == 0 and not loose.exists() and layer["changed"], out + err
    assert run_cli(capsys, "status", "--root", pkg)[0] == 0


def test_a_package_whose_files_were_edited_is_not_current_and_export_keeps_the_edits(
    npm_install, tmp_path, capsys, isolated_dirs
):
    """senpi loads the package's index.js, not only the extension file beside it: one replaced by
    hand is not the layer (measured before: status and verify said "package", exit 0, and the
    provider got every copy). export then refuses to write over the edit instead of losing it."""
    pkg, _agent, folder = applied_beside_a_package(npm_install, capsys, isolated_dirs)
    (folder / "index.js").write_text("export default function () {}\n")
    code, out, err = run_cli(capsys, "status", "--root", pkg, "--json")
    (row,) = [p for r in json.loads(out)["installs"] for p in r["patches"] if p["patch"] == "directive-dedupe"]
    assert code == 1 and not row["as_wanted"], out + err
    assert "its index.js edited since it was exported" in row["extension"]["detail"]
    assert run_cli(capsys, "verify", "--root", pkg)[0] == 1
    code, _, err = run_cli(capsys, "export", folder)
    assert code == 1 and "index.js edited since it was exported" in err and len(err.strip().splitlines()) == 1
    assert (folder / "index.js").read_text() == "export default function () {}\n"


CHECK = textwrap.dedent("""
    process.argv[1] = process.env.SENPI_CLI;
    const { default: factory } = await import(process.env.PACKAGE_INDEX);
    const handlers = {}, statuses = [], commands = {};
    factory({
        on: (event, handler) => { (handlers[event] ??= []).push(handler); },
        registerCommand: (name, options) => { commands[name] = options; },
        appendEntry: () => {},
    });
    const u = "<ultrawork-mode>" + "x".repeat(500) + "</ultrawork-mode>";
    const messages = [1, 2].map((n) => ({ role: "user", content: [{ type: "text", text: u + n }] }));
    const ui = { setStatus: (key, text) => statuses.push([key, text]), notify: () => {} };
    const collapsed = {};
    for (const provider of ["claude-sdk-oauth", "openai"]) {
        const ctx = { hasUI: true, ui, model: { provider }, sessionManager: { getSessionId: () => "s" } };
        for (const h of handlers.session_start ?? []) h({ reason: "startup" }, ctx);
        let out;
        for (const h of handlers.context) {
            const result = h({ type: "context", messages }, ctx);
            out = result?.messages ?? out;
        }
        collapsed[provider] = out !== undefined && out[1].content[0].text.startsWith("[ultrawork-mode:");
    }
    console.log(JSON.stringify({ collapsed, statuses }));
""")


def run_check(folder: Path, pkg: Path) -> dict:
    env = {"SENPI_CLI": str(pkg / "dist" / "cli.js"), "PACKAGE_INDEX": (folder / "index.js").as_uri()}
    result = subprocess.run(
        ["node", "--input-type=module", "-e", CHECK], capture_output=True, text=True, env={**os.environ, **env}
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_package_stands_aside_on_claude_only_where_upstreams_keep_last_runs_alone(npm_install, tmp_path, capsys):
    folder = tmp_path / "pkg"
    assert export_json(capsys, folder)[0] == 0
    modern = npm_install(3)  # upstream's keep-last dedupe, no dist layer
    seen = run_check(folder, modern)
    assert seen["collapsed"] == {"claude-sdk-oauth": False, "openai": True}
    (key, text), *_ = [s for s in seen["statuses"] if "off for claude-sdk-oauth" in s[1]]
    assert key == "senpi-guard" and package_layer.FIX in text
    assert run_cli(capsys, "apply", "--root", modern)[0] == 0  # the dist layer: the extension runs everywhere
    assert run_check(folder, modern)["collapsed"] == {"claude-sdk-oauth": True, "openai": True}
    older = npm_install(2)  # no keep-last of its own
    seen = run_check(folder, older)
    assert seen["collapsed"] == {"claude-sdk-oauth": True, "openai": True}
    assert not [s for s in seen["statuses"] if "off for" in s[1]]
