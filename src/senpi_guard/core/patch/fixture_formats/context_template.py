"""`context-template`: a fixture is a context's message list written as a template. A message may be
`{"repeat": n, "messages": [...]}` (its messages n times, `{{n}}` the counter), and `{{key}}` in any
string becomes the generated block named `key` under "directives": `{"tag": t, "bytes": n, "seed":
s}`, a deterministic `<t>…</t>` of exactly n UTF-8 bytes (directive-dedupe's fixtures: the
incident's 25 kB blocks are written once, not 70 times)."""

from __future__ import annotations

from typing import Any

WORDS = (
    "verify",
    "every",
    "claim",
    "before",
    "reporting",
    "done",
    "run",
    "the",
    "tests",
    "read",
    "files",
    "fully",
    "never",
    "stop",
    "early",
    "plan",
    "todo",
    "items",
    "parallel",
    "agents",
)


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


def _fill(value: Any, directives: dict[str, str], n: int) -> Any:
    if isinstance(value, str):
        for key, text in directives.items():
            value = value.replace("{{" + key + "}}", text)
        return value.replace("{{n}}", str(n))
    if isinstance(value, list):
        return [_fill(v, directives, n) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, directives, n) for k, v in value.items()}
    return value


def expand(raw: dict[str, Any], default_name: str) -> dict[str, Any]:
    """`{{key}}` becomes the directive named `key`, `{{n}}` the repeat counter."""
    directives = {
        key: directive_text(d["tag"], int(d.get("bytes", 400)), d.get("seed", key))
        for key, d in raw.get("directives", {}).items()
    }
    messages: list[Any] = []
    for item in raw["messages"]:
        if "repeat" in item:
            for n in range(int(item["repeat"])):
                messages.extend(_fill(item["messages"], directives, n))
        else:
            messages.append(_fill(item, directives, 0))
    return {
        "name": raw.get("name", default_name),
        "about": raw.get("about", ""),
        "checks": list(raw.get("checks", [])),
        "growing": bool(raw.get("growing", False)),
        "context": {"messages": messages},
    }


SHAPE = '{"messages": [message or {"repeat": n, "messages": [...]}, ...], "directives": {key: {"tag": ...}}}'


def problem(raw: Any) -> str | None:
    """What keeps `raw` from being a fixture of this format (see SHAPE), or None."""
    if not isinstance(raw, dict) or not isinstance(raw.get("messages"), list):
        return 'it has no "messages" list'
    for index, item in enumerate(raw["messages"]):
        if not isinstance(item, dict):
            return f"messages[{index}] is not an object"
        if "repeat" in item and not (type(item["repeat"]) is int and isinstance(item.get("messages"), list)):
            return f"messages[{index}] repeats without a whole `repeat` and a `messages` list"
    directives = raw.get("directives", {})
    if not isinstance(directives, dict) or not all(
        isinstance(d, dict) and isinstance(d.get("tag"), str) and type(d.get("bytes", 0)) is int
        for d in directives.values()
    ):
        return '"directives" does not give each key a {"tag": …, "bytes": n}'
    return None
