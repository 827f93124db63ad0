"""The source distribution, built with the real build backend (hatchling): everything the README
points at is inside it, and its own CI entry point starts from it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import HANG_S

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    pytest.importorskip("hatchling")
    out = tmp_path_factory.mktemp("sdist")
    work = out / "checkout"
    shutil.copytree(
        ROOT,
        work,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", ".ci/tools", "tools", "__pycache__", "*.egg-info", "dist", "build"
        ),
    )
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "sdist", "-d", str(out / "dist")],
        cwd=work,
        check=True,
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    (tarball,) = (out / "dist").glob("senpi_guard-*.tar.gz")
    with tarfile.open(tarball) as archive:
        archive.extractall(out / "unpacked", filter="data")
    (unpacked,) = (out / "unpacked").iterdir()
    return unpacked


def test_every_file_the_readme_links_to_is_in_the_sdist(sdist):
    readme = (sdist / "README.md").read_text()
    links = {m[1] for m in re.finditer(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme) if "://" not in m[1]}
    links |= {"scripts/test.sh", ".ci/run", "LICENSE", "pyproject.toml"}
    missing = sorted(link for link in links if not (sdist / link).exists())
    assert not missing and len(links) > 4, missing


def test_the_sdists_ci_entry_point_starts(sdist, tmp_path):
    """`.ci/run` runs the README's test command: it gets as far as making its venv (a python3 that
    fails right after stands in, so the test stays fast)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text(f'#!/bin/sh\necho "$@" > "{tmp_path}/called"; exit 7\n')
    (fake / "python3").chmod(0o755)
    done = subprocess.run(
        ["bash", str(sdist / ".ci" / "run")],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        env={"PATH": f"{fake}:/usr/bin:/bin"},
    )
    assert done.returncode == 7 and "==> python venv in .venv" in done.stdout, done.stdout + done.stderr
    assert (tmp_path / "called").read_text().split() == ["-m", "venv", ".venv"]


def test_the_package_builds_and_passes_twine_check_strict(tmp_path):
    """What would be published: `python -m build` (the standard frontend, with the build backend the
    test group installs: no network) makes the sdist and, from it, the wheel, into a temp folder;
    `twine check --strict` (PyPI's own checks of the metadata and the README as long description)
    passes both; nothing is left in the checkout (no dist/, no build/)."""
    before = sorted(path.name for path in ROOT.iterdir())
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    dists = sorted(tmp_path.iterdir())
    assert sorted(path.suffix for path in dists) == [".gz", ".whl"], dists
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, dists)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert checked.returncode == 0 and checked.stdout.count("PASSED") == 2, checked.stdout + checked.stderr
    assert sorted(path.name for path in ROOT.iterdir()) == before
