"""`senpi-guard check SPEC|TARBALL|DIR`: a pre-flight before `senpi update`. Every patch is
dry-applied and replayed with node on a senpi release that is not installed: an npm spec is fetched
with `npm pack --ignore-scripts` (the package's scripts never run), a tarball is unpacked, a folder
is read as it is. Nothing is installed, nothing of the release is written."""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from senpi_guard import discover, ui
from senpi_guard.commands import common
from senpi_guard.core.patch.classify import State
from senpi_guard.errors import FatalError
from senpi_guard.io.store import Store
from senpi_guard.layers import extension
from senpi_guard.layers.dist import Reconciler

SUMMARY = "pre-flight a senpi release (npm spec, tarball or folder): would every patch apply? installs nothing"
EXAMPLE = (
    "senpi-guard check @code-yeongyu/senpi@latest   # before `senpi update`\n"
    "  senpi-guard check ./senpi-2026.8.22-2.tgz --json"
)
EXITS = "0 every patch applies (or has nothing to repair) and its replay passes; 1 anything else"


def configure(parser) -> None:
    parser.add_argument(
        "release",
        metavar="SPEC|TARBALL|DIR",
        help="an npm spec (@code-yeongyu/senpi@VERSION), a .tgz, or an unpacked package folder",
    )
    common.add_json(parser)


NOBODY = "nobody"  # whom root replays a fetched release as: code from the registry is no one's here
GIT_SPECS = ("git+", "git:", "github:", "gitlab:", "bitbucket:", "gist:")


def _hand_to(tree: Path, scratch: Path, owner: tuple[int, int]) -> None:
    """As root, a release that is not root's own is replayed as its owner: the unpacked files are
    given to that owner (prove/owners then runs node as them), in a scratch folder they can reach."""
    scratch.chmod(0o711)
    for path in [tree.parent, tree, *tree.rglob("*")]:
        os.chown(path, *owner, follow_symlinks=False)


def _owner_for(path: Path | None) -> tuple[int, int] | None:
    """Whom root replays a release as: the tarball's owner, `nobody` for a fetched one, None (root)
    for root's own tarball or when not root."""
    if os.geteuid() != 0:
        return None
    if path is None:
        try:
            entry = pwd.getpwnam(NOBODY)
        except KeyError as exc:
            raise FatalError(
                f"as root, a fetched release is replayed as the user {NOBODY!r}, which this "
                "machine lacks; run check as a normal user"
            ) from exc
        return entry.pw_uid, entry.pw_gid
    st = path.stat()
    return None if st.st_uid == 0 else (st.st_uid, st.st_gid)


def _unpack(tarball: Path, work: Path) -> Path:
    if not hasattr(tarfile, "data_filter"):  # (Python < 3.11.4 cannot extract a tarball safely)
        raise FatalError(
            f"unpacking {tarball} safely needs Python 3.11.4 or newer; unpack it yourself "
            "(tar xzf) and pass the package folder"
        )
    try:
        with tarfile.open(tarball) as archive:
            archive.extractall(work / "unpacked", filter="data")  # (no links out, no devices, no owners)
    except (tarfile.TarError, OSError) as exc:
        raise FatalError(
            f"{tarball} is not a package tarball npm could have made ({exc}); pass a .tgz "
            "from `npm pack`, a package folder, or an npm spec"
        ) from exc
    found = [p for p in (work / "unpacked").iterdir() if (p / "package.json").is_file()]
    if len(found) != 1:
        raise FatalError(f"{tarball} holds no package/ folder with a package.json; is it an npm tarball?")
    return found[0]


def _fetch(spec: str, work: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise FatalError(
            f"{spec!r} is neither a file nor a folder here, and fetching it needs npm: install "
            "Node.js with npm, or pass a .tgz or a package folder"
        )
    ui.progress(f"npm pack --ignore-scripts {spec} (fetches the release; runs none of its scripts)…")
    done = subprocess.run(
        [npm, "pack", "--ignore-scripts", "--pack-destination", str(work), spec],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        cwd=work,
        env=discover.quiet_env(),
    )
    tarballs = sorted(work.glob("*.tgz"))
    if done.returncode != 0 or len(tarballs) != 1:
        lines = [
            ln
            for ln in done.stderr.splitlines()
            if ln.strip() and "Log files were not written" not in ln and "A complete log" not in ln
        ]
        why = next((ln for ln in lines if "error" in ln.lower()), lines[-1] if lines else "no tarball was made")
        raise FatalError(
            f"npm could not fetch {spec!r}: {why}; check the spec (e.g. "
            "@code-yeongyu/senpi@2026.8.22-2), or pass a .tgz or a package folder"
        )
    return _unpack(tarballs[0], work)


def release_dir(release: str, work: Path) -> Path:
    """The package folder of the release: a folder as it is, a tarball unpacked, a spec fetched (a
    `file:` spec of a folder or tarball is read as that path: npm would run a folder's `prepare`)."""
    local = release.removeprefix("file:")
    path = Path(local).expanduser()
    if path.is_dir():
        return path
    if path.is_file():
        found = _unpack(path, work)
        owner = _owner_for(path)
    elif release.startswith(("/", "./", "../", "~", "file:")) or release.endswith((".tgz", ".tar.gz")):
        raise FatalError(
            f"{path}: no such file or folder; pass an npm spec (@code-yeongyu/senpi@VERSION), "
            "a .tgz, or an unpacked package folder"
        )
    elif (
        release.startswith(GIT_SPECS)
        or ("://" in release and release.split("://")[0].startswith("git"))
        or re.fullmatch(r"[^@/:\s][^/:\s]*/[^/:\s]+", release)
    ):  # (`owner/repo`: npm's GitHub shorthand)
        raise FatalError(
            f"{release}: a git spec; npm may run the package's `prepare` script to pack one, "
            "so check refuses it: clone it, and pass the folder"
        )
    else:
        found = _fetch(release, work)
        owner = _owner_for(None)
    if owner is not None:
        _hand_to(found, work, owner)
    return found


def _patch_row(patch, config, install, store: Store) -> dict[str, Any]:
    reconciler = Reconciler(patch, config, store, reuse_stored_replays=False)
    shape = reconciler.inspect(install).shape
    outcome = reconciler.reconcile(install, dry_run=True)
    report = outcome.report
    row = {
        "patch": patch.name,
        "shape": shape.range if shape else None,
        "state": outcome.before,
        "ok": outcome.ok,
        "dist_ok": outcome.ok,
        "would_write": outcome.would_write,
        "detail": outcome.detail,
        "checks": report.checks_run if report else 0,
        "extension": None,
    }
    if patch.extension is not None and outcome.before not in (State.UNSUPPORTED, State.ERROR):
        try:
            ext = extension.replay(patch, config, patch.render_extension(config), [install], store, reuse=False)
            row["extension"] = {
                "ok": ext.ok,
                "checks": ext.checks_run,
                "host": ext.stats.get("host"),
                "failures": [str(f) for f in ext.failures[:3]],
            }
            row["ok"] = row["ok"] and ext.ok
        except FatalError as exc:
            row["extension"] = {"ok": False, "checks": 0, "host": None, "failures": [str(exc)]}
            row["ok"] = False
    return row


def _line(version: str, row: dict[str, Any]) -> str:
    shape = f"shape {row['shape']}, " if row["shape"] else ""
    ext = row["extension"]
    ext_text = (
        ""
        if ext is None
        else (
            f"; extension {ext['checks']} checks passed"
            if ext["ok"]
            else f"; the extension FAILS: {'; '.join(ext['failures'])}"
        )
    )
    if not row["dist_ok"]:
        return f"senpi {version} [{row['patch']}]: {ui.paint('BREAKS', 'bad')}: {row['detail']}{ext_text}"
    if row["state"] == State.CLEAN:
        return f"senpi {version} [{row['patch']}]: nothing to repair"
    what = "patchable" if row["would_write"] else str(row["state"])
    return f"senpi {version} [{row['patch']}]: {shape}{what}, {row['checks']} checks passed{ext_text}"


def run(args) -> int:
    patches, config = common.load()
    with tempfile.TemporaryDirectory(prefix="senpi-guard-check-") as scratch:
        package_dir = release_dir(args.release, Path(scratch))
        install = discover.describe(package_dir, "check")
        if install is None:
            raise FatalError(
                f"{args.release}: not a {discover.PACKAGE_NAME} package (its package.json names "
                "another package, or is missing)"
            )
        # a store of its own: records, backups and remembered replays of a release never installed
        # must not mix with the real installs' ones
        store = Store(Path(scratch) / "data", Path(scratch) / "state")
        rows = [_patch_row(patch, config, install, store) for patch in patches]
    if args.json:
        print(
            json.dumps(
                {
                    "release": args.release,
                    "version": install.version,
                    "patches": rows,
                    "ok": all(r["ok"] for r in rows),
                },
                indent=2,
            )
        )
    else:
        for row in rows:
            print(_line(install.version, row))
    return 0 if all(row["ok"] for row in rows) else 1
