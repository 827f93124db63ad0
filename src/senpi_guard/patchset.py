"""Load a patch definition from patches/<name>/ and render it for a given config."""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from senpi_guard.config import Config
from senpi_guard.errors import FatalError

DEFAULT_PATCH = "directive-dedupe"
CONFIG_SLOT = "/*senpi-guard:config*/"
CONFIG_SLOT_END = "/*senpi-guard:config-end*/"


@dataclass(frozen=True)
class Target:
    role: str
    function: str
    required: bool
    wrap: str

    @property
    def callee(self) -> str:
        return self.wrap.partition("(")[0]


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
    root: Path

    def target(self, role: str) -> Target:
        return next(t for t in self.targets if t.role == role)

    @property
    def callees(self) -> tuple[str, ...]:
        return tuple(t.callee for t in self.targets)

    def marker(self, tag: str) -> str:
        return self.marker_template.replace("{tag}", tag)

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

    def config_digest(self, config: Config) -> str:
        text = json.dumps({"tags": list(config.tags), "marker": self.marker_template})
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def fixtures(self) -> list[dict[str, Any]]:
        return [expand_fixture(json.loads(p.read_text("utf-8")), p.stem)
                for p in sorted((self.root / "fixtures").glob("*.json"))]


def patches_root() -> Path:
    installed = resources.files("senpi_guard").joinpath("patches")
    if installed.is_dir():
        return Path(str(installed))
    checkout = Path(__file__).resolve().parents[2] / "patches"
    if checkout.is_dir():
        return checkout
    raise FatalError("senpi-guard's patches/ folder is missing from this installation; "
                     "reinstall senpi-guard")


def load(name: str = DEFAULT_PATCH) -> Patch:
    root = patches_root() / name
    try:
        data = tomllib.loads((root / "patch.toml").read_text("utf-8"))
        payload = (root / data["payload"]).read_text("utf-8")
        targets = tuple(Target(t["role"], t["function"], bool(t.get("required", False)), t["wrap"])
                        for t in data["targets"])
        patch = Patch(data["name"], int(data["version"]), data.get("summary", ""), payload,
                      data["marker"], int(data["max_marker_bytes"]), data.get("call", "context"),
                      data.get("hand_fix_function", ""), targets, root)
    except (OSError, KeyError, ValueError, tomllib.TOMLDecodeError) as exc:
        raise FatalError(f"patch definition {root} is broken ({exc}); reinstall senpi-guard") from exc
    if CONFIG_SLOT not in payload or CONFIG_SLOT_END not in payload:
        raise FatalError(f"payload {root / data['payload']} has no config slot; reinstall senpi-guard")
    return patch


WORDS = ("verify", "every", "claim", "before", "reporting", "done", "run", "the", "tests", "read",
         "files", "fully", "never", "stop", "early", "plan", "todo", "items", "parallel", "agents")


def directive_text(tag: str, size: int, seed: str) -> str:
    """A deterministic directive block of exactly `size` UTF-8 bytes (for size ≥ its tags)."""
    head, tail = f"<{tag}>\n", f"\n</{tag}>"
    lines: list[str] = []
    total = len(head) + len(tail)
    index = 0
    while total < size:
        words = " ".join(WORDS[(index * 7 + k + len(seed)) % len(WORDS)] for k in range(9))
        line = f"{index + 1}. [{seed}] {words}."
        lines.append(line)
        total += len(line) + 1
        index += 1
    body = "\n".join(lines)
    excess = len(head) + len(body) + len(tail) - size
    if excess > 0:
        body = body[: len(body) - excess]
    return head + body + tail


def expand_fixture(raw: dict[str, Any], default_name: str) -> dict[str, Any]:
    directives = {key: directive_text(d["tag"], int(d.get("bytes", 400)), d.get("seed", key))
                  for key, d in raw.get("directives", {}).items()}

    def fill(value: Any, n: int) -> Any:
        if isinstance(value, str):
            for key, text in directives.items():
                value = value.replace("{{" + key + "}}", text)
            return value.replace("{{n}}", str(n))
        if isinstance(value, list):
            return [fill(v, n) for v in value]
        if isinstance(value, dict):
            return {k: fill(v, n) for k, v in value.items()}
        return value

    messages: list[Any] = []
    for item in raw["messages"]:
        if "repeat" in item:
            for n in range(int(item["repeat"])):
                messages.extend(fill(item["messages"], n))
        else:
            messages.append(fill(item, 0))
    return {
        "name": raw.get("name", default_name),
        "about": raw.get("about", ""),
        "checks": list(raw.get("checks", [])),
        "growing": bool(raw.get("growing", False)),
        "context": {"messages": messages},
    }
