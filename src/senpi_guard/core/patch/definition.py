"""Load a patch definition from patches/<name>/ (patch.toml, payload, checks, fixtures)."""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from senpi_guard.core.patch.fixtures import load_fixtures
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config

DEFAULT_PATCH = "directive-dedupe"
CONFIG_SLOT = "/*senpi-guard:config*/"
CONFIG_SLOT_END = "/*senpi-guard:config-end*/"


@dataclass(frozen=True)
class Target:
    role: str
    function: str
    required: bool
    wrap: str  # the call each return value goes through ("": returns are left alone)
    entry: str = ""  # a statement placed first in the function's body, on its first line (optional)

    @property
    def callee(self) -> str:
        return self.wrap.partition("(")[0]


@dataclass(frozen=True)
class KnownShape:
    """One row of `[versions]`: a range of senpi releases and how its target looks there."""

    range: str
    folder: str
    returns: str
    upstream: bool


@dataclass(frozen=True)
class ExtensionLayer:
    """The second layer: a senpi extension (one ES module) installed in the agent's extensions/."""

    source: str  # its code, appended to the rendered payload
    file_name: str  # what it is called in <agent dir>/extensions/
    checks: Path  # named checks its replay runs
    fixtures: Path  # folder of fixture sessions (message lists)


@dataclass(frozen=True)
class Patch:
    name: str
    version: int
    summary: str
    payload_template: str
    marker_template: str
    max_marker_bytes: int
    call: str
    hand_fix_function: str
    targets: tuple[Target, ...]
    shapes: tuple[KnownShape, ...]
    root: Path
    shapes_under: str = ""  # where under dist/ the shapes' folders are (status looks there first)
    extension: ExtensionLayer | None = None

    def target(self, role: str) -> Target:
        return next(t for t in self.targets if t.role == role)

    @property
    def callees(self) -> tuple[str, ...]:
        return tuple(t.callee for t in self.targets if t.callee)

    @property
    def checks_path(self) -> Path:
        return self.root / "checks.mjs"

    @property
    def likely_folders(self) -> tuple[str, ...]:
        """The folders under dist/ where known shapes keep their targets."""
        folders = dict.fromkeys(f"{self.shapes_under}/{s.folder}".strip("/") for s in self.shapes)
        return tuple(folders)

    def marker(self, tag: str) -> str:
        return self.marker_template.replace("{tag}", tag)

    def shape_of(self, target_path: Path, upstream: bool) -> KnownShape | None:
        """The known shape whose folder holds the target, told apart by upstream's dedupe."""
        return next((s for s in self.shapes
                     if s.folder == target_path.parent.name and s.upstream == upstream), None)

    def check_tags(self, tags: tuple[str, ...]) -> None:
        for tag in tags:
            marker = self.marker(tag)
            size = len(marker.encode("utf-8"))
            if size > self.max_marker_bytes:
                raise FatalError(f"tag {tag!r} is too long: its marker would be {size} bytes "
                                 f"(at most {self.max_marker_bytes}); shorten it in the config")
            for other in tags:
                if f"<{other}>" in marker:
                    raise FatalError(f"the marker for {tag!r} would contain <{other}>; "
                                     "rename the tag in the config")

    def render_payload(self, config: Config) -> str:
        self.check_tags(config.tags)
        literal = json.dumps({"tags": list(config.tags), "marker": self.marker_template},
                             ensure_ascii=True, separators=(",", ":"))
        head, _, rest = self.payload_template.partition(CONFIG_SLOT)
        _, _, tail = rest.partition(CONFIG_SLOT_END)
        return f"{head}{CONFIG_SLOT}{literal}{CONFIG_SLOT_END}{tail}"

    def render_extension(self, config: Config) -> str:
        """The extension file: a header line, the payload's functions, the extension's code. The
        header names the patch, its version, the config digest and the sha256 of what follows."""
        if self.extension is None:
            raise FatalError(f"patch {self.name} has no extension layer")
        body = f"{self.render_payload(config).rstrip()}\n{self.extension.source.rstrip()}\n"
        digest = hashlib.sha256(body.encode()).hexdigest()
        return (f"// senpi-guard: {self.name} v{self.version} layer=extension "
                f"config-sha256={self.config_digest(config)} content-sha256={digest}\n{body}")

    def config_digest(self, config: Config) -> str:
        text = json.dumps({"tags": list(config.tags), "marker": self.marker_template})
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def patch_id(self, config: Config) -> str:
        """Names exactly what gets written: this patch, its version and the rendered settings."""
        return f"{self.name} v{self.version} {self.config_digest(config)}"

    def fixtures(self) -> list[dict[str, Any]]:
        return load_fixtures(self.root / "fixtures")


def patches_root() -> Path:
    installed = resources.files("senpi_guard").joinpath("patches")
    if installed.is_dir():
        return Path(str(installed))
    checkout = Path(__file__).resolve().parents[4] / "patches"
    if checkout.is_dir():
        return checkout
    raise FatalError("senpi-guard's patches/ folder is missing from this installation; "
                     "reinstall senpi-guard")


def _parse(data: dict[str, Any], root: Path) -> Patch:
    payload = (root / data["payload"]).read_text("utf-8")
    targets = tuple(Target(t["role"], t["function"], bool(t.get("required", False)), t.get("wrap", ""),
                           t.get("entry", "")) for t in data["targets"])
    if any(not (t.wrap or t.entry) for t in targets):
        raise ValueError("a target has neither a wrap nor an entry")
    shapes = tuple(KnownShape(s["range"], s["folder"], s["returns"], bool(s.get("upstream", False)))
                   for s in data.get("versions", {}).get("known", []))
    layer = data.get("extension")
    extension = ExtensionLayer((root / layer["source"]).read_text("utf-8"), layer["file_name"],
                               root / layer["checks"], root / layer["fixtures"]) if layer else None
    return Patch(data["name"], int(data["version"]), data.get("summary", ""), payload,
                 data["marker"], int(data["max_marker_bytes"]), data.get("call", "context"),
                 data.get("hand_fix_function", ""), targets, shapes, root,
                 data.get("versions", {}).get("under", ""), extension)


def load(name: str = DEFAULT_PATCH) -> Patch:
    root = patches_root() / name
    try:
        patch = _parse(tomllib.loads((root / "patch.toml").read_text("utf-8")), root)
    except (OSError, KeyError, ValueError, TypeError, tomllib.TOMLDecodeError) as exc:
        raise FatalError(f"patch definition {root} is broken ({exc}); reinstall senpi-guard") from exc
    if CONFIG_SLOT not in patch.payload_template or CONFIG_SLOT_END not in patch.payload_template:
        raise FatalError(f"the payload of {root} has no config slot; reinstall senpi-guard")
    if not patch.checks_path.is_file():
        raise FatalError(f"{patch.checks_path} is missing; reinstall senpi-guard")
    return patch
