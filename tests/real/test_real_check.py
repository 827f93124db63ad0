"""`senpi-guard check`: the pre-flight on every real build, as a tarball, as an npm spec and as an
unpacked folder; and on releases it cannot patch, what breaks. Nothing is ever installed."""

from __future__ import annotations

import json
import tarfile

import pytest
from conftest import sha, tree_digest
from realsenpi import DIST_ONLY, FULL_TARBALL, FULL_VERSION, http_folder, senpi_guard

from senpi_guard.demo import sample

pytestmark = pytest.mark.real
BUILDS = {**{v: name for v, name in DIST_ONLY.items()}, FULL_VERSION: FULL_TARBALL}
SHAPE_OF = {
    "2026.7.30": "2026.7.28 - 2026.7.31",
    "2026.8.1": "2026.7.31-2 - 2026.8.4",
    "2026.8.9": "2026.8.4-2 and later",
    FULL_VERSION: "2026.8.4-2 and later",
}


@pytest.mark.parametrize("version", list(BUILDS))
def test_every_real_build_is_patchable_and_nothing_is_installed(real_builds, version, tmp_path):
    tarball = real_builds / BUILDS[version]
    before = sha(tarball)
    done = senpi_guard("check", tarball, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(done.stdout)
    (dedupe,) = [p for p in doc["patches"] if p["patch"] == "directive-dedupe"]
    assert doc["version"] == version and doc["ok"] and dedupe["shape"] == SHAPE_OF[version]
    assert dedupe["would_write"] and dedupe["checks"] >= 39 and dedupe["extension"]["ok"]
    (hooks,) = [p for p in doc["patches"] if p["patch"] == "hand-fix-hooks"]
    assert hooks["ok"] and hooks["state"] == "clean"
    assert sha(tarball) == before and list(tmp_path.iterdir()) == []  # nothing unpacked left, nothing installed
    text = senpi_guard("check", tarball, cwd=tmp_path).stdout
    line = f"senpi {version} [directive-dedupe]: shape {SHAPE_OF[version]}, patchable, {dedupe['checks']} checks"
    assert line + " passed" in text
    # (a release's tarball carries none of senpi's dependencies, the full one neither: its runner
    # cannot load there, and the line says the proof ran through a stand-in; it said nothing before)
    assert dedupe["extension"]["host"] == "minimal"
    host = "a minimal host, not senpi's runner"
    assert f"; extension {dedupe['extension']['checks']} checks passed through {host}" in text, text


def test_a_file_spec_is_read_as_its_path_and_no_script_runs(real_builds, tmp_path):
    """`file:FOLDER` is read in place (npm would run a folder's `prepare` to pack it); a git spec,
    which npm may build with its scripts, is refused."""
    work = tmp_path / "src"
    with tarfile.open(real_builds / DIST_ONLY["2026.8.1"]) as archive:
        archive.extractall(work, filter="data")
    manifest = work / "package" / "package.json"
    doc = json.loads(manifest.read_text())
    marker = tmp_path / "a-script-ran"
    doc["scripts"] = {name: f"touch {marker}" for name in ("prepack", "prepare", "postpack", "preinstall")}
    manifest.write_text(json.dumps(doc))
    done = senpi_guard("check", f"file:{work / 'package'}", cwd=tmp_path)
    assert done.returncode == 0 and "senpi 2026.8.1 [directive-dedupe]: shape" in done.stdout, done.stderr
    assert not marker.exists()
    for spec in ("git+https://example.invalid/senpi.git", "code-yeongyu/senpi", "github:code-yeongyu/senpi"):
        done = senpi_guard("check", spec)
        assert done.returncode == 1 and "a git spec" in done.stderr and not marker.exists(), spec


def test_a_folder_is_checked_in_place_and_left_as_it_was(unpacked):
    folder = unpacked[FULL_VERSION]
    before = tree_digest(folder / "dist")
    done = senpi_guard("check", folder)
    assert done.returncode == 0 and "patchable, " in done.stdout
    assert tree_digest(folder / "dist") == before


@pytest.fixture
def empty_registry(tmp_path):
    """A registry that knows no package (a real HTTP server of 127.0.0.1 over an empty folder): npm's
    fetch fails at once with a 404, network or none. (io/runas passes npm_config_registry to check's
    npm, and none of npm's other settings, `npm_config_offline` included.)"""
    folder = tmp_path / "empty-registry"
    folder.mkdir()
    with http_folder(folder) as registry:
        yield registry


def test_a_release_it_cannot_patch_says_what_breaks(tmp_path, empty_registry):
    src = tmp_path / "src"
    sample.write_sample_package(
        src, 2, version="2026.9.9", bridge_source="export function somethingElse() {\n    return [];\n}\n"
    )
    tarball = sample.npm_pack(src, tmp_path / "packs")
    done = senpi_guard("check", tarball)
    assert done.returncode == 1
    assert "senpi 2026.9.9 [directive-dedupe]: BREAKS: " in done.stdout and "buildPromptBlocks" in done.stdout
    for bad, why in (
        (tmp_path / "nope.tgz", "no such file"),
        (tmp_path / "src" / "package.json", "not a package"),
        ("@code-yeongyu/senpi@0.0.0-no-such", "npm could not fetch"),
    ):
        done = senpi_guard("check", bad, env={"npm_config_registry": empty_registry})
        errors = [line for line in done.stderr.splitlines() if line.startswith("senpi-guard:")]
        assert done.returncode == 1 and len(errors) == 1 and why in errors[0], done.stderr
