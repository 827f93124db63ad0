import json
import re

import pytest
from conftest import (
    SHAPE_REL,
    UPSTREAM_REL,
    field,
    hand_patched,
    rows_of,
    run_cli,
    sha,
    tree_digest,
    write_user_config,
)

from senpi_guard.core.patch import apply as edit
from senpi_guard.demo import sample


def status_json(capsys, pkg):
    code, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    return code, json.loads(out)["installs"][0]


@pytest.mark.parametrize("shape", [1, 2, 3])
def test_apply_patches_verifies_and_is_idempotent(npm_install, capsys, shape):
    pkg = npm_install(shape)
    target = pkg / SHAPE_REL[shape]
    original = target.read_bytes()
    code, row = status_json(capsys, pkg)
    assert (code, row["state"], "upstream" in row["targets"]) == (1, "unpatched", shape == 3)

    code, out, err = run_cli(capsys, "apply", "--root", pkg, "--json")
    result = json.loads(out)["installs"][0]
    assert code == 0, err
    assert result["state"] == "patched" and result["verification"]["ok"]
    assert result["verification"]["checks"] >= 30
    patched = target.read_bytes()
    assert patched != original and b"__senpiGuardDedupe(" in patched
    assert edit.read_header(patched).original_sha256 == edit.sha256(original)
    if shape == 3:
        assert b"__senpiGuardUpstream(" in (pkg / UPSTREAM_REL).read_bytes()

    code, row = status_json(capsys, pkg)
    assert (code, row["state"]) == (0, "patched")
    assert row["last_verify"]["ok"] is True

    before = tree_digest(pkg)
    code, out, _ = run_cli(capsys, "apply", "--root", pkg, "--json")
    assert code == 0 and json.loads(out)["installs"][0]["changed"] == []
    assert tree_digest(pkg) == before


def test_patched_module_dedupes_when_senpi_runs_it(npm_install, tmp_path, capsys):
    """The installed, patched module — imported from the real dist by node — dedupes."""
    import subprocess

    pkg = npm_install(3)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    uw = "<ultrawork-mode>\n" + "do the work\n" * 2000 + "</ultrawork-mode>"
    messages = []
    for n in range(5):
        messages += [
            {"role": "user", "content": f"{uw}\nstep {n}"},
            {"role": "assistant", "content": [{"type": "text", "text": f"ok {n}"}]},
        ]
    messages.append({"role": "user", "content": f"{uw}\nlast"})
    script = tmp_path / "run.mjs"
    stream = pkg / "dist/core/extensions/builtin/claude-sdk-oauth/stream.js"
    script.write_text(f"""import {{ preparePrompt }} from {json.dumps(stream.as_uri())};
const blocks = preparePrompt({{ messages: {json.dumps(messages)} }});
const text = blocks.filter((b) => b.type === "text").map((b) => b.text).join("");
const copies = text.split("<ultrawork-mode>").length - 1;
console.log(JSON.stringify({{ copies, bytes: Buffer.byteLength(text) }}));""")
    out = json.loads(subprocess.run(["node", str(script)], capture_output=True, text=True, check=True).stdout)
    assert out["copies"] == 1
    assert out["bytes"] < len(uw) * 2


def test_revert_restores_exact_bytes_from_backup(npm_install, capsys):
    pkg = npm_install(3)
    before = tree_digest(pkg)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    assert tree_digest(pkg) != before
    code, out, _ = run_cli(capsys, "revert", "-v", "--root", pkg)
    assert code == 0 and "restored from the backup" in out
    backup_line = next(line for line in out.splitlines() if line.strip().startswith("backup"))
    assert "backups" in backup_line and ".orig" in backup_line  # the path, shown with -v only
    assert tree_digest(pkg) == before
    assert status_json(capsys, pkg)[1]["state"] == "held"  # unpatched, and left so until apply


def test_a_dry_run_after_a_revert_shows_what_apply_would_do(npm_install, capsys):
    """apply lifts a revert's hold, so its dry run judges the install without it: what it would write
    (before: "held ... nothing changed", while apply then patched it), and the hold left in place."""
    pkg = npm_install(3)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    code, out, _ = run_cli(capsys, "revert", "--root", pkg, "--json")
    assert code == 0 and rows_of(json.loads(out))[0]["millis"] >= 1  # (its own time: was always 0)
    before = tree_digest(pkg)
    code, out, err = run_cli(capsys, "apply", "--dry-run", "--root", pkg, "--json")
    row = rows_of(json.loads(out))[0]
    assert code == 0, err
    assert (row["state"], row["held"]) == ("unpatched", False)
    assert SHAPE_REL[3] in {str(p) for p in row["would_write"]}, row
    assert row["detail"].endswith("held (reverted by `senpi-guard revert`): apply lifts the hold"), row
    assert re.match(
        r"dry run: verified: \d+ checks passed \(node v[\d.]+; the identical replay passed at ", row["detail"]
    )
    code, out, _ = run_cli(capsys, "apply", "--dry-run", "--root", pkg)  # (no node ran: each line says so)
    assert code == 0 and out.count("the identical replay passed at") == 2, out
    assert tree_digest(pkg) == before and status_json(capsys, pkg)[1]["state"] == "held"
    code, out, _ = run_cli(capsys, "apply", "--root", pkg, "--json")
    assert code == 0 and {str(p) for p in rows_of(json.loads(out))[0]["changed"]} >= {SHAPE_REL[3]}


def test_an_install_revert_cannot_write_fails_alone_and_the_others_are_reverted(npm_install, capsys):
    """A read-only target folder (or a full disk) is that install's failure, in one line: the other
    installs are still reverted (before, the first such error ended the whole run)."""
    stuck, fine = npm_install(3), npm_install(3)
    roots = [arg for pkg in (stuck, fine) for arg in ("--root", pkg)]
    before = {pkg: tree_digest(pkg) for pkg in (stuck, fine)}
    assert run_cli(capsys, "apply", *roots)[0] == 0
    patched = tree_digest(stuck)
    folder = (stuck / SHAPE_REL[3]).parent
    folder.chmod(0o555)
    try:
        code, out, err = run_cli(capsys, "revert", *roots, "--json")
    finally:
        folder.chmod(0o755)
    assert code == 1, out + err
    rows = {r["package_dir"]: r for r in rows_of(json.loads(out)) if "package_dir" in r}
    assert not rows[str(stuck)]["ok"] and "read-only" in rows[str(stuck)]["detail"], rows
    assert rows[str(fine)]["ok"], rows
    assert tree_digest(fine) == before[fine] and tree_digest(stuck) == patched


def test_revert_takes_away_the_temp_file_a_killed_writer_left_beside_a_target(npm_install, capsys):
    """A writer killed before its rename leaves `.<name>.<n>.senpi-guard` in dist/: apply took it
    away, revert and uninstall did not (measured: left after uninstall)."""
    pkg = npm_install(3)
    before = tree_digest(pkg)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    target = pkg / SHAPE_REL[3]
    leftover = target.with_name(f".{target.name}.943438792109.senpi-guard")
    leftover.write_bytes(b"half of a file")
    assert run_cli(capsys, "revert", "--root", pkg)[0] == 0
    assert not leftover.exists() and tree_digest(pkg) == before


def test_revert_without_backup_removes_the_edit(npm_install, capsys, isolated_dirs):
    import shutil

    pkg = npm_install(2)
    before = tree_digest(pkg)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    shutil.rmtree(isolated_dirs / "xdg_data_home")
    code, out, _ = run_cli(capsys, "revert", "--root", pkg)
    assert code == 0 and "removed the edit" in out and "no backup" in out
    assert tree_digest(pkg) == before


def test_tag_config_change_repatches_from_original(npm_install, capsys, isolated_dirs):
    pkg = npm_install(2)
    target = pkg / SHAPE_REL[2]
    original = target.read_bytes()
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    write_user_config(isolated_dirs, 'tags = ["ultrawork-mode", "my-directive"]\n')
    assert status_json(capsys, pkg)[1]["state"] == "stale"
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    patched = target.read_bytes()
    assert b'"tags":["ultrawork-mode","my-directive"]' in patched
    assert edit.read_header(patched).original_sha256 == edit.sha256(original)
    assert patched.count(b"// senpi-guard: patched by directive-dedupe") == 1


def test_dry_run_prints_windowed_diff_and_writes_nothing(npm_install, capsys):
    pkg = npm_install(1)
    before = tree_digest(pkg)
    code, out, _ = run_cli(capsys, "apply", "--root", pkg, "--dry-run")
    assert code == 0 and "dry run" in out and len(out.splitlines()) < 25  # a summary line per file
    assert "__senpiGuardDedupe" not in out and re.search(r"diff     \S+prompt-bridge\.js: \+\d+ -\d+ lines", out)
    code, out, _ = run_cli(capsys, "-v", "apply", "--root", pkg, "--dry-run")  # the whole diff
    assert "+    return __senpiGuardDedupe(blocks.length > 0" in out
    assert all(len(line) <= 170 for line in out.splitlines() if line.startswith(("+", "-")))
    assert tree_digest(pkg) == before


def test_hand_patched_file_is_cleaned_then_patched(custom_package, capsys):
    pkg = custom_package(hand_patched(sample.prompt_bridge_source(2)))
    target = pkg / SHAPE_REL[2]
    code, row = status_json(capsys, pkg)
    assert row["state"] == "hand-patched"
    code, out, err = run_cli(capsys, "apply", "--root", pkg)
    assert code == 0, out + err
    patched = target.read_bytes()
    assert b"dedupeRepeatedDirectiveBlocks" not in patched
    clean = sample.prompt_bridge_source(2).encode()
    assert edit.read_header(patched).original_sha256 == edit.sha256(clean)
    # revert gives back exactly what the user had (their hand-patched file)
    run_cli(capsys, "revert", "--root", pkg)
    assert b"dedupeRepeatedDirectiveBlocks(blocks)" in target.read_bytes()


def test_hand_patched_file_that_cannot_be_cleaned_is_refused(custom_package, capsys):
    source = hand_patched(sample.prompt_bridge_source(2)).replace(
        "//# sourceMappingURL", "export const keep = dedupeRepeatedDirectiveBlocks;\n//# sourceMappingURL"
    )
    pkg = custom_package(source)
    before = tree_digest(pkg)
    code, out, _ = run_cli(capsys, "apply", "--root", pkg)
    assert code == 1
    prefix = pkg.parents[3]  # (the install's own prefix: npm's default one may be another)
    assert "cannot remove cleanly" in out and f"npm install -g --prefix {prefix} @code-yeongyu/senpi@2026.8.1" in out
    assert tree_digest(pkg) == before


@pytest.mark.parametrize("variant", ["crlf", "tabs", "arrow", "arrow-expression", "export-clause", "early-returns"])
def test_tolerated_variants_apply_and_verify(custom_package, capsys, variant):
    src = sample.prompt_bridge_source(2)
    if variant == "crlf":
        src = src.replace("\n", "\r\n")
    elif variant == "tabs":
        src = src.replace("    ", "\t")
    elif variant == "arrow":
        src = src.replace(
            "export function buildPromptBlocks(context, customNames) {",
            "export const buildPromptBlocks = (context, customNames) => {",
        )
        src = src.replace("    return blocks;\n}\n//#", "    return blocks;\n};\n//#")
    elif variant == "arrow-expression":
        src = src.replace(
            "export function buildPromptBlocks(context, customNames) {", "function buildAll(context, customNames) {"
        )
        src = src.replace(
            "//# sourceMappingURL",
            "export const buildPromptBlocks = (context, customNames) => "
            "buildAll(context, customNames);\n//# sourceMappingURL",
        )
    elif variant == "export-clause":
        src = src.replace("export function buildPromptBlocks(", "function buildPromptBlocksImpl(")
        src = src.replace(
            "//# sourceMappingURL", "export { buildPromptBlocksImpl as buildPromptBlocks };\n//# sourceMappingURL"
        )
    elif variant == "early-returns":
        src = src.replace(
            "    const messages = context.messages;",
            "    if (context.messages.length === 0) {\n        return [];\n    }\n"
            "    const messages = context.messages;",
        )
    assert src != sample.prompt_bridge_source(2) or variant == "none"  # the variant took effect
    pkg = custom_package(src)
    code, out, _err = run_cli(capsys, "apply", "--root", pkg, "--json")
    result = json.loads(out)["installs"][0]
    assert code == 0, result["detail"]
    patched = (pkg / SHAPE_REL[2]).read_bytes()
    expected_wraps = 2 if variant == "early-returns" else 1
    assert patched[: patched.index(b"// senpi-guard:")].count(b"__senpiGuardDedupe(") == expected_wraps
    if variant == "crlf":
        assert patched.count(b"\n") == patched.count(b"\r\n")


def test_defer_leaves_shape3_to_upstream_and_removes_our_patch(npm_install, capsys, isolated_dirs):
    pkg = npm_install(3)
    before = tree_digest(pkg)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    write_user_config(isolated_dirs, 'upstream_dedupe = "defer"\n')
    code, out, _ = run_cli(capsys, "apply", "--root", pkg, "--json")
    assert code == 0 and json.loads(out)["installs"][0]["state"] == "upstream"
    assert tree_digest(pkg) == before
    assert status_json(capsys, pkg)[1]["state"] == "upstream"


def test_hard_linked_file_is_replaced_not_edited(npm_install, capsys, tmp_path):
    """A pnpm/bun store copy hard-linked to the target stays byte-identical."""
    pkg = npm_install(2)
    target = pkg / SHAPE_REL[2]
    store_copy = tmp_path / "store-file"
    store_copy.hardlink_to(target)
    original = sha(store_copy)
    mode = target.stat().st_mode
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    assert sha(store_copy) == original
    assert sha(target) != original
    assert target.stat().st_nlink == 1 and target.stat().st_mode == mode


def test_verify_command_reports_figures(npm_install, capsys):
    pkg = npm_install(2)
    code, out, _ = run_cli(capsys, "verify", "--root", pkg)
    assert code == 1 and "not installed" in out
    run_cli(capsys, "apply", "--root", pkg)
    code, out, _ = run_cli(capsys, "verify", "--root", pkg)
    assert code == 0
    changes = field(out, "changes")
    assert "incident-70: 1,789,022 -> 68,645 bytes" in changes
    assert "as installed every copy is re-sent on each full re-send" in changes  # (the why, same line)


def test_verify_beside_upstream_keep_last_leads_with_cache_writes(npm_install, capsys):
    pkg = npm_install(3)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    code, out, _ = run_cli(capsys, "verify", "-v", "--root", pkg)
    assert code == 0
    changes = field(out, "changes")
    assert (
        changes.index("cache-write tokens") < re.search(r"\d{1,3}(,\d{3})+ bytes", changes).start()
    )  # the bytes come last, with the why
    assert "an estimate on a sample session of each shape" in changes
    assert "upstream's keep-last rewrites every earlier copy" in changes
    assert re.search(r"is larger \([\d,]+ -> [\d,]+ bytes\) because every distinct directive is kept", changes)
    assert "bytes" not in field(out, "detail")
    doc = json.loads(run_cli(capsys, "verify", "--json", "--root", pkg)[1])
    figures = doc["installs"][0]["changes"]["per_call"]
    assert (
        figures["incident-70"]["patched"]["cache_write_tokens"]
        < figures["incident-70"]["installed"]["cache_write_tokens"] / 4
    )


def test_older_payload_version_is_stale_and_repatched(npm_install, capsys):
    pkg = npm_install(2)
    target = pkg / SHAPE_REL[2]
    original = target.read_bytes()
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    current = target.read_bytes()
    version = edit.read_header(current).version
    older = current.replace(
        f"// senpi-guard: patched by directive-dedupe v{version} ".encode(),
        f"// senpi-guard: patched by directive-dedupe v{version - 1} ".encode(),
    )
    target.write_bytes(older)
    assert status_json(capsys, pkg)[1]["state"] == "stale"
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    assert target.read_bytes() == current
    assert edit.read_header(current).original_sha256 == edit.sha256(original)


def test_drifted_file_is_rebuilt_from_backup(npm_install, capsys):
    pkg = npm_install(2)
    target = pkg / SHAPE_REL[2]
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    current = target.read_bytes()
    target.write_bytes(current.replace(b'"USER:\\n"', b'"HUMAN:\\n"'))
    _, row = status_json(capsys, pkg)
    assert row["state"] == "drifted"
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    assert target.read_bytes() == current


@pytest.mark.parametrize("shape, version, costly", [(2, "2026.8.1", False), (3, "2026.8.5", True)])
def test_revert_says_when_it_puts_a_hand_fix_back_and_the_way_to_senpi_as_shipped(
    custom_package, capsys, shape, version, costly
):
    shipped = sample.prompt_bridge_source(shape)
    pkg = custom_package(hand_patched(shipped), shape, version)
    target = pkg / SHAPE_REL[shape]
    assert b"dedupeRepeatedDirectiveBlocks(blocks)" in target.read_bytes()
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    code, out, _ = run_cli(capsys, "revert", "--root", pkg, "--json")
    (row,) = rows_of(json.loads(out))
    assert code == 0 and b"dedupeRepeatedDirectiveBlocks(blocks)" in target.read_bytes()  # byte-exact, as it was
    assert "hand-applied dedupeRepeatedDirectiveBlocks" in row["detail"]
    assert ("drops every directive block" in row["detail"]) == costly
    assert "`senpi-guard apply`, then `senpi-guard revert --from-edit`" in row["detail"]
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0  # the way it names
    assert run_cli(capsys, "revert", "--from-edit", "--root", pkg)[0] == 0
    assert target.read_text() == shipped


def test_a_replay_is_announced_only_when_node_runs_it(npm_install, capsys):
    """The progress lines name a replay only when one starts: a first apply proves both layers; an
    apply with nothing to change, a verify that reuses identical replays, and a patch with nothing
    to repair say nothing (before, every apply and verify announced each patch's replay up front)."""
    pkg = npm_install(3)
    code, _, err = run_cli(capsys, "apply", "--root", pkg)
    assert code == 0, err
    lines = [line for line in err.splitlines() if "replaying" in line]
    assert lines == [
        "senpi 2026.8.5 (npm) [directive-dedupe]: replaying the fixtures with node…",
        "directive-dedupe: the extension layer: replaying the fixture sessions through it…",
    ], err
    code, _, err = run_cli(capsys, "apply", "--root", pkg)
    assert (code, [line for line in err.splitlines() if "replaying" in line]) == (0, []), err
    code, out, err = run_cli(capsys, "verify", "--root", pkg)  # (reuses the identical replays: it says when)
    assert code == 0 and out.count("the identical replay passed at") == 2, out
    assert [line for line in err.splitlines() if "replaying" in line] == [], err
    code, out, err = run_cli(capsys, "verify", "--fresh", "--root", pkg)
    assert code == 0 and "the identical replay passed" not in out, out
    assert [line for line in err.splitlines() if "replaying" in line] == [
        "senpi 2026.8.5 (npm) [directive-dedupe]: replaying the fixtures with node…",
        "directive-dedupe: replaying the fixture sessions through the extension…",
    ], err


def test_status_says_when_the_last_verification_was_of_other_bytes(npm_install, tarballs, capsys):
    """The record of the last verification outlives the bytes it was of: after a revert, or an update
    that replaced the patched files, status says so instead of "verified passed N checks" over
    files no replay saw (text, JSON, and the metric that is 1 only for the files as they are)."""
    pkg = npm_install(2)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    out = run_cli(capsys, "status", "-v", "--root", pkg)[1]  # (a passed verification: said with -v)
    assert re.fullmatch(r"passed \d+ checks at .+", field(out, "verified")), out
    assert status_json(capsys, pkg)[1]["patches"][0]["last_verify_of_these_files"] is True
    for change in ("revert", "update"):
        if change == "revert":
            assert run_cli(capsys, "revert", "--root", pkg)[0] == 0
        else:  # (the patched release again, then another over it with the real npm)
            assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
            npm_install(3, tarball=tarballs[3], prefix=pkg.parents[3])
        out = run_cli(capsys, "status", "--root", pkg)[1]  # (without -v too: it is amiss)
        other = r"\(the last verification, of other bytes: passed \d+ checks at .+\)"
        assert re.fullmatch(rf"not the files as they are now {other}", field(out, "verified")), (change, out)
        sub = status_json(capsys, pkg)[1]["patches"][0]
        assert sub["last_verify"]["ok"] is True and sub["last_verify_of_these_files"] is False
        out = run_cli(capsys, "status", "--root", pkg, "--format", "prometheus")[1]
        assert re.search(
            r'^senpi_guard_install_last_verify_ok\{install="[^"]+",patch="directive-dedupe"\} 0$', out, re.M
        ), out


def test_the_risk_line_of_a_hand_edited_dist_layer_says_edited_not_absent(npm_install, capsys):
    pkg = npm_install(3)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    target = pkg / SHAPE_REL[3]
    target.write_bytes(target.read_bytes() + b"\n// my own line\n")
    out = run_cli(capsys, "status", "--root", pkg)[1]
    risk = field(out, "risk:")
    assert "the dist layer was edited by hand, so the extension may be here without it: " in risk, out
    assert "drifted" in out and "without the dist layer" not in risk
