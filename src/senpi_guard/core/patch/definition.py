"""Load patch definitions from patches/<name>/ (patch.toml, payload, checks, fixtures): each patch
is data — its targets and how each is edited, its settings, the shapes it knows, its extension
layer — and the engine reads all of them; nothing about one patch is written in the engine."""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from senpi_guard.core.patch import schema as names
from senpi_guard.core.patch import settings as settings_mod
from senpi_guard.core.patch.extra import EXTRA_PATCHES, extra_patch_folders
from senpi_guard.core.patch.fixtures import check_formats, load_fixtures
from senpi_guard.core.patch.settings import Setting
from senpi_guard.core.patch.targets import Target, parse_edits, parse_target
from senpi_guard.errors import FatalError
from senpi_guard.io import reader
from senpi_guard.io.config import Config

CONFIG_SLOT = "/*senpi-guard:config*/"
CONFIG_SLOT_END = "/*senpi-guard:config-end*/"


@dataclass(frozen=True)
class KnownShape:
    """One row of `[versions]`: a range of senpi releases and how its targets look there."""

    range: str
    folder: str
    returns: str
    present: tuple[str, ...] = ()  # the optional targets this shape has


@dataclass(frozen=True)
class Defer:
    """When `setting` is `value`, an install that has target `target` is left to senpi's own code."""

    setting: str
    value: str
    target: str
    # what taking the patch out of such an install costs, in words apply and verify print
    cost: str = "hands the install to senpi's own code"


@dataclass(frozen=True)
class ExtensionLayer:
    """The second layer: a senpi extension (one ES module) installed in the agent's extensions/."""

    source: str  # its code (its source files joined), appended to the rendered payload
    file_name: str  # what it is called in <agent dir>/extensions/
    checks: Path  # named checks its replay runs
    fixtures: Path  # folder of fixture sessions (message lists)
    unsafe_alone_with: str = ""  # a target beside which the extension without the dist layer is unsafe
    unsafe_alone: str = ""  # ... and why
    risks: tuple[tuple[str, str], ...] = ()  # (target, what the extension costs there without the dist layer)


@dataclass(frozen=True)
class Patch:
    name: str
    version: int
    summary: str
    targets: tuple[Target, ...]
    root: Path
    payload_template: str = ""
    marker_template: str = ""
    max_marker_bytes: int = 0
    call: str = "context"
    hand_fix_function: str = ""
    shapes: tuple[KnownShape, ...] = ()
    shapes_under: str = ""  # where under dist/ the shapes' folders are (status looks there first)
    extension: ExtensionLayer | None = None
    settings_schema: tuple[Setting, ...] = ()
    write_order: tuple[str, ...] = ()  # roles written first, in this order (the others after)
    defer: Defer | None = None
    headline: tuple[str, ...] = ()  # fixtures whose figures `verify` prints
    audit: dict[str, str] = field(default_factory=dict, hash=False)  # roles audit serialises with, by use
    order: int = 100  # patches are applied to a file in this order
    # what restoring the hand-applied fix costs where a role is present (revert says it), by role
    hand_fix_risks: dict[str, str] = field(default_factory=dict, hash=False)
    edits: tuple[str, ...] = ()  # the edit kinds its targets use (what it names in patch.toml)
    fixtures_format: str = ""  # how its fixture files are read (core/patch/fixture_formats)
    audit_counts: str = ""  # its node module (beside checks.mjs) that says what `audit` counts in a text

    def target(self, role: str) -> Target:
        return next(t for t in self.targets if t.role == role)

    @property
    def primary(self) -> Target:
        """The target an install is named by (the first required one)."""
        return next((t for t in self.targets if t.required), self.targets[0])

    def specs(self, kind: str) -> tuple[Any, ...]:
        """The parsed fields of each of its targets edited by `kind`."""
        return tuple(t.spec for t in self.targets if t.edit == kind)

    @property
    def checks_path(self) -> Path:
        return self.root / "checks.mjs"

    def scripts(self) -> list[Path]:
        """The patch's own node modules (its checks and what they import), copied beside the harness."""
        return sorted(self.root.glob("*.mjs"))

    @property
    def likely_folders(self) -> tuple[str, ...]:
        """The folders under dist/ where known shapes keep their targets."""
        folders = dict.fromkeys(f"{self.shapes_under}/{s.folder}".strip("/") for s in self.shapes)
        return tuple(folders)

    def marker(self, tag: str) -> str:
        return self.marker_template.replace("{tag}", tag)

    def shape_of(self, target_path: Path, present: set[str]) -> KnownShape | None:
        """The known shape whose folder holds the primary target, told apart by which optional
        targets are there too."""
        optional = {t.role for t in self.targets if not t.required} & present
        return next(
            (
                s
                for s in self.shapes
                if s.folder == target_path.parent.name
                and set(s.present) == optional & {r for shape in self.shapes for r in shape.present}
            ),
            None,
        )

    def write_rank(self, role: str) -> int:
        return self.write_order.index(role) if role in self.write_order else len(self.write_order)

    # ---- settings ----------------------------------------------------------------------------
    def settings(self, config: Config) -> dict[str, Any]:
        """This patch's settings in `config` (its table, else top-level keys where allowed), checked."""
        table = config.table(self.name)
        where = f"config {config.source or ''} [patches.{self.name}]".replace("  ", " ")
        unknown = sorted(set(table) - {s.name for s in self.settings_schema})
        if unknown:
            known = ", ".join(s.name for s in self.settings_schema) or "none"
            raise FatalError(f"{where}: unknown setting {unknown[0]!r} (known: {known}); nothing was changed")
        out = {}
        for setting in self.settings_schema:
            value = table.get(setting.name, config.loose_value(setting.name) if setting.top_level else None)
            value = setting.default if value is None else value
            out[setting.name] = settings_mod.check(setting, value, where, self.marker_template, self.max_marker_bytes)
        return out

    def top_level_keys(self) -> set[str]:
        return {s.name for s in self.settings_schema if s.top_level}

    def rendered(self, config: Config, extension: bool = False) -> dict[str, Any]:
        """The settings that are part of the rendered code (lists as lists); with `extension`, also
        those rendered into the extension layer alone."""
        values = self.settings(config)
        out: dict[str, Any] = {}
        for s in self.settings_schema:
            rendered = s.render or (extension and s.extension_only)
            if rendered and (s.when is None or values.get(s.when[0]) == s.when[1]):
                out[s.name] = list(v) if isinstance(v := values[s.name], tuple) else v
                if s.kind == "tags" and isinstance(v, str) and s.known_as:
                    out[s.known_as] = list(s.known)  # (a word such as "auto" keeps these at any size)
                if s.kind == "tags" and isinstance(v, str) and s.events_as:
                    out[s.events_as] = list(s.events)  # (…and never collapses these)
        return out

    def _slot(self, config: Config, extension: bool = False) -> dict[str, Any]:
        """What the rendered code is configured with: the rendered settings and the marker."""
        marker = {"marker": self.marker_template} if self.marker_template else {}
        return {**self.rendered(config, extension), **marker}

    def job_settings(self, config: Config) -> dict[str, Any]:
        """What a replay's job tells the patch's own checks: the rendered settings and the marker;
        a tags setting is always a list (for a word, its known tags), and a setting with `job_as`
        is also given under that name while it is rendered."""
        slot = self._slot(config)
        extra: dict[str, Any] = {"maxMarkerBytes": self.max_marker_bytes} if self.marker_template else {}
        for s in self.settings_schema:
            if s.kind == "tags" and isinstance(slot.get(s.name), str):
                extra[s.name] = list(s.known)
            if s.job_as and s.name in slot:
                extra[s.job_as] = slot[s.name]
        return {**slot, **extra}

    def deferred(self, config: Config, present: set[str]) -> bool:
        """Whether the config leaves an install with these targets to senpi's own code."""
        return (
            self.defer is not None
            and self.defer.target in present
            and self.settings(config).get(self.defer.setting) == self.defer.value
        )

    # ---- rendering -----------------------------------------------------------------------------
    @property
    def has_slot(self) -> bool:
        return CONFIG_SLOT in self.payload_template and CONFIG_SLOT_END in self.payload_template

    @property
    def configures_payload(self) -> bool:
        """Whether its payload is rendered with anything (a rendered setting, the marker): then it
        needs a config slot; a payload without either is written as it is."""
        return bool(self.marker_template) or any(s.render or s.extension_only for s in self.settings_schema)

    def render_payload(self, config: Config, extension: bool = False) -> str:
        if not self.has_slot:  # (only a payload with nothing to configure may have none)
            return self.payload_template
        literal = json.dumps(self._slot(config, extension), ensure_ascii=True, separators=(",", ":"))
        head, _, rest = self.payload_template.partition(CONFIG_SLOT)
        _, _, tail = rest.partition(CONFIG_SLOT_END)
        return f"{head}{CONFIG_SLOT}{literal}{CONFIG_SLOT_END}{tail}"

    def render_extension(self, config: Config) -> str:
        """The extension file: a header line, the payload's functions, the extension's code. The
        header names the patch, its version, the config digest and the sha256 of what follows."""
        if self.extension is None:
            raise FatalError(f"patch {self.name} has no extension layer")
        own = json.dumps({"name": self.name, "version": self.version}, separators=(",", ":"))
        body = (
            f"{self.render_payload(config, extension=True).rstrip()}\n"
            f"const __senpiGuardPatch = {own};\n{self.extension.source.rstrip()}\n"
        )
        digest = hashlib.sha256(body.encode()).hexdigest()
        return (
            f"// senpi-guard: {self.name} v{self.version} layer=extension "
            f"config-sha256={self.config_digest(config, extension=True)} content-sha256={digest}\n{body}"
        )

    def config_digest(self, config: Config, extension: bool = False) -> str:
        """What the rendered settings change in the code (the same for equal settings); with
        `extension`, in the extension layer's code."""
        text = json.dumps(self._slot(config, extension))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def patch_id(self, config: Config) -> str:
        """Names exactly what gets written: this patch, its version and the rendered settings."""
        return f"{self.name} v{self.version} {self.config_digest(config)}"

    def fixture_folders(self) -> list[Path]:
        """Every folder of fixtures it replays: its own, its targets', its extension's."""
        folders = [self.root / "fixtures", *(self.root / t.fixtures for t in self.targets if t.fixtures)]
        return [*folders, *([self.extension.fixtures] if self.extension else [])]

    def fixtures(self) -> list[dict[str, Any]]:
        return self.load_fixtures(self.root / "fixtures")

    def load_fixtures(self, folder: Path) -> list[dict[str, Any]]:
        """The fixtures in one of its folders, read in its own format (none when it has none)."""
        return load_fixtures(folder, self.fixtures_format) if self.fixtures_format else []


def patches_root() -> Path:
    installed = resources.files("senpi_guard").joinpath("patches")
    if installed.is_dir():
        return Path(str(installed))
    checkout = Path(__file__).resolve().parents[4] / "patches"
    if checkout.is_dir():
        return checkout
    raise FatalError("senpi-guard's patches/ folder is missing from this installation; reinstall senpi-guard")


def _extension(root: Path, layer: dict[str, Any] | None) -> ExtensionLayer | None:
    if not layer:
        return None
    risks = tuple((r["target"], r["text"]) for r in layer.get("risks", []))
    sources = [layer["source"]] if isinstance(layer["source"], str) else layer["source"]
    source = "".join(reader.own_text(root / name) for name in sources)  # (joined in the order given)
    return ExtensionLayer(
        source,
        layer["file_name"],
        root / layer["checks"],
        root / layer["fixtures"],
        layer.get("unsafe_alone_with", ""),
        layer.get("unsafe_alone", ""),
        risks,
    )


KNOWN_KEYS = frozenset(
    {
        "name",
        "version",
        "summary",
        "targets",
        "payload",
        "marker",
        "max_marker_bytes",
        "call",
        "hand_fix_function",
        "hand_fix_risks",
        "versions",
        "extension",
        "settings",
        "write_order",
        "defer",
        "headline",
        "audit",
        "order",
        "edits",
        "fixtures_format",
        "audit_counts",
    }
)


def _audit_counts(name: str, root: Path) -> str:
    if name and not (Path(name).name == name and name.endswith(".mjs") and (root / name).is_file()):
        raise ValueError(f"audit_counts = {name!r} is not a .mjs file beside its checks.mjs")
    return name


def _parse(data: dict[str, Any], root: Path) -> Patch:
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:  # (a key under the wrong [table] lands here too)
        raise ValueError(f"unknown top-level keys {', '.join(unknown)}")
    names.check(data, root)
    files = data.get("payload") or []
    # (the payload may be split into several files, joined in the order given)
    payload = "".join(reader.own_text(root / name) for name in ([files] if isinstance(files, str) else files))
    versions = data.get("versions", {})
    shapes = tuple(
        KnownShape(s["range"], s["folder"], s["returns"], tuple(s.get("present", ())))
        for s in versions.get("known", [])
    )
    schema = tuple(Setting.parse(name, spec) for name, spec in data.get("settings", {}).items())
    defer = Defer(**data["defer"]) if data.get("defer") else None
    edits = parse_edits(data)
    return Patch(
        data["name"],
        int(data["version"]),
        data.get("summary", ""),
        tuple(parse_target(t, edits) for t in data["targets"]),
        root,
        payload,
        data.get("marker", ""),
        int(data.get("max_marker_bytes", 0)),
        data.get("call", "context"),
        data.get("hand_fix_function", ""),
        shapes,
        versions.get("under", ""),
        _extension(root, data.get("extension")),
        schema,
        tuple(data.get("write_order", ())),
        defer,
        tuple(data.get("headline", ())),
        dict(data.get("audit", {})),
        int(data.get("order", 100)),
        dict(data.get("hand_fix_risks", {})),
        edits,
        data.get("fixtures_format", ""),
        _audit_counts(data.get("audit_counts", ""), root),
    )


def _patch_folder(name: str) -> Path:
    extra = extra_patch_folders()
    return extra[name] if name in extra else patches_root() / name


def load(name: str, root: Path | None = None) -> Patch:
    root = root or _patch_folder(name)
    try:
        patch = _parse(tomllib.loads(reader.own_text(root / "patch.toml")), root)
    except (OSError, KeyError, ValueError, TypeError, tomllib.TOMLDecodeError) as exc:
        raise FatalError(f"patch definition {root} is broken ({exc}); reinstall senpi-guard") from exc
    if patch.configures_payload and not patch.has_slot:
        raise FatalError(
            f"the payload of {root} has no config slot ({CONFIG_SLOT}…{CONFIG_SLOT_END}) for the settings "
            "and marker it renders; reinstall senpi-guard"
        )
    if not patch.checks_path.is_file():
        raise FatalError(f"{patch.checks_path} is missing; reinstall senpi-guard")
    check_formats(patch.name, patch.fixtures_format, patch.fixture_folders())
    return patch


def load_all() -> list[Patch]:
    """Every patch under patches/ and in $SENPI_GUARD_EXTRA_PATCHES, in the order they are applied."""
    root = patches_root()
    folders = {p.name: p for p in sorted(root.iterdir()) if (p / "patch.toml").is_file()}
    for name, folder in extra_patch_folders().items():
        if name in folders:
            raise FatalError(
                f"${EXTRA_PATCHES}: {folder} is named like senpi-guard's own patch {name}; rename its folder"
            )
        folders[name] = folder
    return sorted((load(name, folder) for name, folder in folders.items()), key=lambda patch: (patch.order, patch.name))


def check_config(patches: list[Patch], config: Config) -> None:
    """Every patch's settings in `config` are good, every top-level key is the engine's or a patch's,
    and every [patches.<name>] table names a patch (one line on the first problem)."""
    for patch in patches:
        patch.settings(config)
    config.check_claimed(set().union(*(p.top_level_keys() for p in patches)), [p.name for p in patches])
