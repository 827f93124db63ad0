"""The release `check` looks at: a folder, a tarball or an npm spec, made into a package folder.

As root, nothing of it is unpacked, packed or run as root: a local tarball or folder is unpacked or
copied as its owner (taken with fstat on the descriptor opened, never from the path again), a
fetched spec is packed and unpacked as `nobody` with a scratch HOME and npm cache, and the replays
then run as that user (prove/owners). Root's own tarball is unpacked as `nobody` too."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from senpi_guard import discover, ui
from senpi_guard.errors import FatalError
from senpi_guard.io import reader, runas, unpack
from senpi_guard.prove import sandbox

GIT_SCHEMES = ("git+", "git:", "github:", "gitlab:", "bitbucket:", "gist:")
GIT_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "codeload.github.com", "gist.github.com", "sr.ht")
NAMED = re.compile(r"((?:@[^@/\s]+/)?[^@/\s]+)@(.*)", re.DOTALL)  # name@what
# owner/repo[#committish]: npm's GitHub shorthand (a committish may hold anything: `#semver:^1.0`)
SHORTHAND = re.compile(r"[^@/:\s#][^/:\s#]*/[^/:\s#]+(?:#.*)?", re.DOTALL)
# what check fetches: a registry name, alone or with a version, a range or a dist-tag (`latest`);
# nothing else npm accepts (a tarball URL, a file name, a git committish) is fetched from the registry
REGISTRY_NAME = re.compile(r"(?:@[A-Za-z0-9][\w.~-]*/)?[A-Za-z0-9][\w.~-]*", re.ASCII)
SELECTOR = re.compile(r"(?:[\w+*^~<>=|-][\w.+*^~<>=| -]*)?", re.ASCII)
SCP_LIKE = re.compile(r"[^/\s:]+\.[^/\s:]+:[^/\s].*")  # host.tld:owner/repo (git's ssh form)
INSTEAD = "clone it, and pass the folder (or pass a .tgz, or a registry version: @code-yeongyu/senpi@VERSION)"


def spec_refusal(spec: str) -> str | None:
    """Why fetching `spec` could run code or reach git (None: a registry or plain tarball spec)."""
    named = NAMED.fullmatch(spec)
    body = named[2] if named else spec
    low = body.lower()  # (npm and git read schemes and hosts in any case)
    if low.startswith("npm:"):  # (an alias: what it names is fetched)
        aliased = spec_refusal(body[4:])
        return aliased and f"{spec}: an alias of {aliased}"
    scheme = low.split("://")[0] if "://" in low else ""
    if low.startswith(GIT_SCHEMES) or scheme.startswith("git") or SCP_LIKE.fullmatch(body):
        return f"{spec}: a git spec; npm would clone it and may run its `prepare` script to pack it: {INSTEAD}"
    host = (urlsplit(low).hostname or "") if scheme else ""
    if any(host == known or host.endswith("." + known) for known in GIT_HOSTS):
        return f"{spec}: a git spec (a tarball from the git host {host}, which npm may build): {INSTEAD}"
    if SHORTHAND.fullmatch(body):
        return f"{spec}: a git spec (npm reads owner/repo as GitHub's): {INSTEAD}"
    if named and (low.startswith(("file:", "/", "./", "../", "~/", "link:")) or Path(body).exists()):
        return f"{spec}: a local path after the name (npm would pack a folder with its scripts); pass the path itself"
    if not _from_registry(spec):
        return (
            f"{spec}: not a registry spec (NAME, NAME@VERSION, NAME@RANGE or NAME@TAG): npm would fetch it "
            f"from elsewhere than the registry; {INSTEAD}"
        )
    return None


def _from_registry(spec: str) -> bool:
    """Whether `spec` is one npm resolves through the registry alone (an `npm:` alias of one too)."""
    named = NAMED.fullmatch(spec)
    name, selector = (named[1], named[2]) if named else (spec, "")
    if selector.lower().startswith("npm:"):
        return bool(REGISTRY_NAME.fullmatch(name)) and _from_registry(selector[4:])
    tarball = selector.lower().endswith((".tgz", ".tar", ".tar.gz"))  # (npm reads it as a file)
    return bool(REGISTRY_NAME.fullmatch(name) and SELECTOR.fullmatch(selector)) and not tarball


def _owner(st: os.stat_result) -> runas.Account | None:
    """Whom root unpacks a local release as: its owner (io/runas: never the file's group), `nobody`
    for root's own; None when not root."""
    if os.geteuid() != 0:
        return None
    return runas.nobody() if st.st_uid == 0 else runas.user(st.st_uid)


def _place(work: Path, owner: runas.Account | None) -> Path:
    """A folder of `owner`'s in the scratch: under a name no one else can list, so only that
    unpack (a child that cannot be traced) and root reach it while it is filled."""
    work.chmod(0o711)
    place = work / secrets.token_hex(16)
    place.mkdir(mode=0o700)
    if owner is not None:
        os.chown(place, *owner)
    return place


def _package_in(unpacked: Path, what: str) -> Path:
    found = [p for p in unpacked.iterdir() if p.is_dir() and not p.is_symlink() and (p / "package.json").is_file()]
    if len(found) != 1:
        raise FatalError(f"{what} holds no package/ folder with a package.json; is it an npm tarball?")
    return found[0]


def _from_tarball(fd: int, owner, work: Path, caps: unpack.Caps, what: str) -> Path:
    place = _place(work, owner)
    unpack.as_user(owner, lambda: unpack.extract(fd, place / "unpacked", caps, what))
    return _package_in(place / "unpacked", what)


def _npm_settings(place: Path, owner: runas.Account | None) -> dict[str, str]:
    """What npm's environment (io/runas's allow-list for npm) gets besides: quiet settings, and for
    a fetch as `nobody` a scratch HOME, cache and temp folder (root's are not read; npm keeps node's
    compile cache in `$TMPDIR/node-compile-cache`, and one made in /tmp as `nobody` is a folder no
    other user's node can keep its cache in)."""
    own = dict(discover.QUIET_PROBES)
    if owner is not None:
        own.update(HOME=str(place / "home"), npm_config_cache=str(place / "npm-cache"), TMPDIR=str(place / "tmp"))
        own["npm_config_userconfig"] = str(place / "home" / ".npmrc")
    return own


def _fetch(spec: str, work: Path, caps: unpack.Caps) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise FatalError(
            f"{spec!r} is neither a file nor a folder here, and fetching it needs npm: install "
            "Node.js with npm, or pass a .tgz or a package folder"
        )
    owner = runas.nobody() if os.geteuid() == 0 else None
    place = _place(work, owner)
    ui.progress(f"npm pack --ignore-scripts {spec} (fetches the release; runs none of its scripts)…")
    done = subprocess.run(
        [npm, "pack", "--ignore-scripts", "--pack-destination", str(place), spec],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        cwd=place,
        **runas.popen_kwargs(owner, npm=True, own=_npm_settings(place, owner)),
    )
    tarballs = sorted(place.glob("*.tgz"))
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
    with reader.opened(tarballs[0], reader.TARBALL) as tarball:
        return _from_tarball(tarball.fileno(), owner, work, caps, spec)


def _roots_own(fd: int, st: os.stat_result, path: Path) -> Path:
    """The real path of root's folder open as `fd` (from the descriptor, never the name again),
    refused unless only root can change any folder on it: every later step looks it up by that
    path, so no one else may be able to put something else there. Pinned for mirror's re-check."""
    real = Path(os.readlink(f"/proc/self/fd/{fd}"))
    for folder in (*reversed(real.parents), real):
        here = os.lstat(folder)
        if here.st_uid != 0 or (here.st_mode & 0o022 and not here.st_mode & stat.S_ISVTX):
            raise FatalError(
                f"{path} is root's folder {real}, but {folder} can be changed by uid {here.st_uid} or "
                "others: senpi-guard will not replay code in it as root; move it where only root can "
                "write (chmod go-w), or pass its .tgz (npm pack)"
            )
    sandbox.pin(real, st)
    sandbox.check_pinned(real)
    return real


def release_dir(release: str, work: Path, caps: unpack.Caps) -> Path:
    """The package folder of the release: a folder as it is (as root, another user's copied as
    them), a tarball unpacked, a spec fetched (a `file:` spec of a folder or tarball is read as that
    path: npm would run a folder's `prepare`)."""
    path = Path(release.removeprefix("file:")).expanduser()
    opened = unpack.open_local(path)
    if opened is None:
        local = release.startswith(("/", "./", "../", "~", "file:")) or release.endswith((".tgz", ".tar.gz"))
        if local and ("://" not in release or release.startswith("file:")):  # (a tarball URL is a spec)
            raise FatalError(
                f"{path}: no such file or folder; pass an npm spec (@code-yeongyu/senpi@VERSION), "
                "a .tgz, or an unpacked package folder"
            )
        refusal = spec_refusal(release)
        if refusal:
            raise FatalError(refusal)
        return _fetch(release, work, caps)
    fd, st = opened
    try:
        if not stat.S_ISDIR(st.st_mode):
            return _from_tarball(fd, _owner(st), work, caps, str(path))
        owner = _owner(st) if st.st_uid != 0 else None
        if owner is None and os.geteuid() == 0:  # (root's own: read in place, by the path it really is)
            return _roots_own(fd, st, path)
        if owner is None:  # (yours)
            return path
        place = _place(work, owner)
        unpack.as_user(owner, lambda: unpack.copy_folder(fd, place / "package", caps, str(path)))
        return place / "package"
    finally:
        os.close(fd)
