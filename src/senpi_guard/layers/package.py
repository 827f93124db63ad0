"""The extension layer as a senpi package: `export` renders it into a folder (`package.json` with
senpi's `pi` manifest, the extension file exactly as `apply` writes it, and a start-up check that
loads it), and `package_in` finds such a package among the packages an agent dir's settings list
(`senpi install` writes them to `<agent dir>/settings.json`, `packages`: a local path is kept as it
was given, relative to the agent dir; `npm:` installs go to `<agent dir>/npm/node_modules/`, `git:`
ones to `<agent dir>/git/<host>/<path>`), so that apply, revert and status treat it as that agent
dir's extension layer and never install a second copy beside it."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from senpi_guard import INSTALL_ADVICE, __version__
from senpi_guard.core.patch.apply import header_of
from senpi_guard.core.patch.definition import Patch
from senpi_guard.errors import FatalError
from senpi_guard.io import newfolder, reader
from senpi_guard.io.config import Config
from senpi_guard.io.write import os_error
from senpi_guard.layers.package_filter import CHECK, enabled_by_overrides, loads_check

MANIFEST = "package.json"
KEY = "senpi-guard"  # our own key in package.json: which patch, so that an earlier export is known
FIX = f"{INSTALL_ADVICE}, then `senpi-guard apply`"
SETTINGS = ("settings.jsonc", "settings.json")  # senpi prefers JSONC when both exist


@dataclass(frozen=True)
class Found:
    """A package of ours that an agent dir's settings list."""

    path: Path  # the package folder
    source: str  # the entry as it stands in settings.json (what `senpi remove` takes)
    settings: Path
    version: int | None  # the patch version it was exported with (None: unknown)
    current: bool  # its files are what export writes now (the extension as apply would write it)
    differs: str = ""  # (not current) how it differs, in words
    off: str = ""  # why senpi loads nothing of it: its settings entry filters index.js out ("" when it loads)


def files(patch: Patch, config: Config) -> dict[str, bytes]:
    """Every file of the package, by name."""
    layer = patch.extension
    if layer is None:
        raise FatalError(f"patch {patch.name} has no extension layer: there is nothing to export")
    rendered = patch.render_extension(config)
    digest = patch.config_digest(config, extension=True)
    check = resources.files("senpi_guard.layers").joinpath("package_check.js").read_text("utf-8")
    settings = {
        "patch": patch.name,
        "version": patch.version,
        "under": patch.shapes_under or "core/extensions/builtin",
        "functions": {t.role: t.function for t in patch.targets},
        "unsafeWith": layer.unsafe_alone_with,
        "unsafeAlone": layer.unsafe_alone,
        "risks": [{"target": role, "text": text} for role, text in layer.risks],
        "fix": FIX,
    }
    body = f"const __senpiGuardPackage = {json.dumps(settings)};\n" + check.replace(
        "__SENPI_GUARD_EXTENSION__", layer.file_name
    )
    manifest = {
        "name": f"senpi-guard-{patch.name}",
        "version": f"{patch.version}.0.0",
        "description": f"senpi-guard's extension layer as a senpi package: {patch.summary}",
        "private": True,
        "type": "module",
        "keywords": ["pi-package"],
        "pi": {"extensions": [f"./{CHECK}"]},
        KEY: {"patch": patch.name, "version": patch.version, "config-sha256": digest, "exported-by": __version__},
    }
    return {
        MANIFEST: (json.dumps(manifest, indent=2) + "\n").encode(),
        CHECK: f"// senpi-guard: {patch.name} v{patch.version} layer=package config-sha256={digest}\n{body}".encode(),
        layer.file_name: rendered.encode(),
    }


def _ours(folder: Path) -> dict[str, Any] | None:
    """Our key in a folder's package.json (None when it is not a package senpi-guard exported; a
    package.json senpi-guard will not read, a FIFO say, is refused: reader.Refused)."""
    try:
        manifest = json.loads(reader.read(folder / MANIFEST, reader.MANIFEST))
    except (OSError, ValueError, RecursionError):
        return None
    mark = manifest.get(KEY) if isinstance(manifest, dict) else None
    return mark if isinstance(mark, dict) and isinstance(mark.get("patch"), str) else None


def _refusal(patch: Patch, dest: Path, rendered: dict[str, bytes]) -> str:
    """Why `dest` may not be exported into ("" when it may: absent, empty, or an earlier export)."""
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        return f"{dest} is not a folder; name a new or empty folder, or an earlier export"
    real = Path(os.path.realpath(dest))
    if "extensions" in (real.name, real.parent.name, dest.name, dest.parent.name):
        return (
            f"{dest} is an extensions folder or in one, where senpi loads a package without `senpi install` "
            "(beside senpi-guard's own file, or instead of the extensions there); name a folder outside it"
        )
    if not dest.exists():
        return ""
    present = {p.name for p in dest.iterdir()}
    if not present:
        return ""
    mark = _ours(dest)
    if mark is None or mark["patch"] != patch.name:
        return f"{dest} is not empty and not an earlier `senpi-guard export`; name a new or empty folder"
    extra = sorted(present - set(rendered))
    if extra:
        return f"{dest} is an earlier export but also holds {extra[0]}, which export does not write; move it away"
    edited = edited_files(dest, rendered) if _same_export(mark, rendered) else []
    if edited:
        return (
            f"{dest}: {', '.join(edited)} edited since it was exported; move your edits out of it (or remove "
            "the folder), then retry"
        )
    return ""


def _same_export(mark: dict[str, Any], rendered: dict[str, bytes]) -> bool:
    """Whether a package's mark says this very patch version and config exported it."""
    wanted = json.loads(rendered[MANIFEST])[KEY]
    return all(mark.get(k) == wanted[k] for k in ("patch", "version", "config-sha256"))


def edited_files(folder: Path, rendered: dict[str, bytes]) -> list[str]:
    """The files of a package that are there but not what export writes (a missing one is no
    edit: export writes it again). package.json is compared without the version of senpi-guard
    that exported it (an upgrade alone changes nothing senpi loads)."""
    found = []
    for name, data in rendered.items():
        try:
            there = reader.read(folder / name, reader.EXTENSION)
        except FileNotFoundError:
            continue
        except OSError:
            there = b""
        if not _same_bytes(name, there, data):
            found.append(name)
    return found


def _same_bytes(name: str, there: bytes, data: bytes) -> bool:
    if name != MANIFEST:
        return there == data
    try:
        ours, theirs = json.loads(data), json.loads(there)
    except ValueError:
        return False
    for manifest in (ours, theirs):
        if isinstance(manifest, dict) and isinstance(manifest.get(KEY), dict):
            manifest[KEY].pop("exported-by", None)
    return ours == theirs


def export(patch: Patch, config: Config, dest: Path) -> tuple[Path, bool]:
    """Render the package into `dest` (a new or empty folder, or an earlier export, replaced): a
    temp folder beside it, renamed into place, every step relative to descriptors (io/newfolder: root
    writing where a user can write the parent). Returns the folder and whether anything changed."""
    dest = Path(os.path.abspath(dest))
    rendered = files(patch, config)
    refusal = _refusal(patch, dest, rendered)
    if refusal:
        raise FatalError(refusal)
    same = dest.is_dir() and {p.name for p in dest.iterdir()} == set(rendered)
    if same and all(_same(dest / name, data) for name, data in rendered.items()):
        return dest, False
    try:
        newfolder.put(dest, rendered)
    except OSError as exc:
        raise os_error(exc, "write", dest, "check the folder's permissions, then retry") from exc
    return dest, True


def _same(path: Path, data: bytes) -> bool:
    try:
        return reader.read(path, reader.EXTENSION) == data
    except OSError:
        return False


# ---- finding it in an agent dir ------------------------------------------------------------------


def _settings(agent_dir: Path, key: str = "packages") -> tuple[Path, list[Any]] | None:
    """The agent dir's settings file and the list under `key` in it (None: no readable file)."""
    for name in SETTINGS:
        path = agent_dir / name
        try:
            raw = reader.read(path, reader.SETTINGS)  # (a FIFO, another user's link: refused in one line)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        try:
            text = raw.decode("utf-8")
            data = json.loads(_without_comments(text) if name.endswith("c") else text)
        except (ValueError, RecursionError):
            return None  # (senpi itself would not read it either)
        found = data.get(key) if isinstance(data, dict) else None
        return path, found if isinstance(found, list) else []
    return None


def switched_off(agent_dir: Path, file: Path) -> str:
    """Why senpi loads an extension file found in the agent dir's extensions/ none of the time ("":
    it loads it): the settings' own `extensions` patterns, read as senpi 2026.8.22-2 reads them for
    such a file (isEnabledByOverrides, relative to the agent dir; `senpi config` writes
    `-extensions/<file>` when its item is unticked)."""
    listed = _settings(agent_dir, "extensions")
    if listed is None:
        return ""
    settings, patterns = listed
    if enabled_by_overrides(file, patterns, agent_dir):
        return ""
    overrides = [p for p in patterns if isinstance(p, str) and p.startswith(("!", "+", "-"))]
    return f"{settings.name}'s extensions patterns ({json.dumps(overrides)}) switch it off, so senpi loads none of it"


_JSONC = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.S)


def _without_comments(text: str) -> str:
    text = _JSONC.sub(lambda m: m.group(1) or "", text)
    return re.sub(r",(\s*[}\]])", r"\1", text)  # (trailing commas, which JSONC allows)


def _folder_of(source: str, agent_dir: Path) -> Path | None:
    """Where senpi keeps the package a settings entry names (user scope)."""
    if source.startswith("npm:"):
        spec = source[4:].strip()
        scope, _, rest = spec.partition("/") if spec.startswith("@") else ("", "", spec)
        name = rest.split("@", 1)[0]
        return agent_dir / "npm" / "node_modules" / (f"{scope}/{name}" if scope else name)
    match = re.match(r"^(?:git:|https?://|ssh://|git://)(?:[^@/]+@)?([^/:]+)[/:](.+?)(?:\.git)?(?:@[^/]*)?$", source)
    if match and not source.startswith(("/", ".", "~")):
        return agent_dir / "git" / match[1] / match[2]
    path = os.path.expanduser(source.strip())
    return Path(os.path.normpath(agent_dir / path))


def package_in(patch: Patch, config: Config, agent_dir: Path) -> Found | None:
    """The package of ours (exported for `patch`) that the agent dir's own settings list, if any:
    a folder whose package.json carries our key, or a file that is our rendered extension."""
    listed = _settings(agent_dir)
    if listed is None or patch.extension is None:
        return None
    settings, packages = listed
    for entry in packages:
        source = entry if isinstance(entry, str) else entry.get("source") if isinstance(entry, dict) else None
        folder = _folder_of(source, agent_dir) if isinstance(source, str) and source.strip() else None
        if folder is None:
            continue
        mark = _ours(folder) if folder.is_dir() else _file_mark(folder, patch)
        if mark is None or mark.get("patch") != patch.name:
            continue
        version = mark.get("version")
        missing: list[str] = []
        edited: list[str] = []
        if folder.is_dir():  # (every file senpi loads from it: the manifest, the check, the extension)
            rendered = files(patch, config)
            missing = [name for name in rendered if not (folder / name).exists()]
            edited = edited_files(folder, rendered)
            current = not missing and not edited
            edited = edited if _same_export(mark, rendered) else []  # (else: another version or config)
        else:
            current = _same(folder, patch.render_extension(config).encode())
        differs = "" if current else difference(patch, config, mark, missing, edited)
        off = "" if folder.is_file() or loads_check(entry, folder) else _off_text(entry)
        return Found(folder, source, settings, version if isinstance(version, int) else None, current, differs, off)
    return None


def _off_text(entry: Any) -> str:
    shown = {k: entry[k] for k in ("extensions", "autoload") if isinstance(entry, dict) and k in entry}
    return f"its settings entry ({json.dumps(shown)}) switches its {CHECK} off, so senpi loads none of it"


def difference(patch: Patch, config: Config, mark: dict[str, Any], missing: list[str], edited: list[str]) -> str:
    """Why a package of ours is not what export writes now: files missing, or edited since this
    very version and config exported it, else what its manifest says of it."""
    if missing:
        return f"its {', '.join(missing)} missing (export writes them again)"
    if edited:
        return f"its {', '.join(edited)} edited since it was exported (move your edits out of it first)"
    if mark.get("version") != patch.version:
        return f"exported by {patch.name} v{mark.get('version') or '?'} (this senpi-guard renders v{patch.version})"
    if mark.get("config-sha256", patch.config_digest(config, extension=True)) != patch.config_digest(
        config, extension=True
    ):
        return "exported with another config"
    if mark.get("exported-by", __version__) != __version__:
        return f"exported by senpi-guard {mark.get('exported-by')}, whose start-up check differs"
    return "its files differ from what export writes"


def _file_mark(path: Path, patch: Patch) -> dict[str, Any] | None:
    """A single file installed as a package: ours when its header is the extension's."""
    try:
        first = reader.head(path, reader.EXTENSION, 4096).partition(b"\n")[0]
    except OSError:
        return None
    header = header_of(first + b"\n")
    if header is None or header.get("layer") != "extension" or header.get("name") != patch.name:
        return None
    return {"patch": patch.name, "version": int(header["version"]) if str(header.get("version")).isdigit() else None}


def remove_name(found: Found) -> str:
    """What to give `senpi remove` from any folder: an npm or git source as listed, a local one as
    its absolute path (senpi resolves a relative one against the current folder)."""
    return found.source if found.source.startswith(("npm:", "git:", "https:", "http:", "ssh:")) else str(found.path)
