"""One story for every state of the README's table: put an install in a state, then hold what
`status` says (its next step and its plan), what `verify` says, what `apply --dry-run --json`
names and what `apply` then changes to one story. The dry run and status's plan name exactly the
install files and agent-dir files that apply changes (senpi-guard's own backups and kept copies
live outside both); status's next step names `apply` exactly when apply has something to do;
verify agrees with status (exit code and next steps). Run as a user runs them (the console script
in a subprocess). Used on sample packages (tests/e2e) and on a real build (tests/real)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from conftest import hand_patched, run_console, tree_digest

BRIDGE = "dist/core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js"
UPSTREAM = "dist/core/extensions/builtin/claude-sdk-oauth/prompt-directive-dedupe.js"
EXT = "senpi-guard-directive-dedupe.js"


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def steps_of(out: str) -> list[str]:
    return [line.split(None, 1)[1] for line in out.splitlines() if line.strip().startswith("next ")]


class World:
    def __init__(self, pkg: Path, dirs: Path) -> None:
        self.pkg, self.dirs = pkg, dirs
        self.agent = dirs / "agent"
        self.config = dirs / "config.toml"
        self.config.write_text("")
        self.env = {"SENPI_GUARD_CONFIG": str(self.config)}

    def run(self, *args: str) -> tuple[int, str]:
        done = run_console(*args, "--root", self.pkg, env=self.env)
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, done.stdout

    def files(self) -> dict[str, str]:
        return {
            **{f"pkg/{k}": v for k, v in tree_digest(self.pkg).items()},
            **{f"agent/{k}": v for k, v in tree_digest(self.agent).items()},
        }


def applied(world: World) -> None:
    assert world.run("apply")[0] == 0


def stale(world: World) -> None:
    world.config.write_text('tags = ["ultrawork-mode"]\n')
    applied(world)
    world.config.write_text('tags = ["ultrawork-mode", "omo-senpi-task"]\n')


def partial(world: World) -> None:
    original = (world.pkg / UPSTREAM).read_bytes()
    applied(world)
    (world.pkg / UPSTREAM).write_bytes(original)


def hand(world: World) -> None:
    bridge = world.pkg / BRIDGE
    bridge.write_text(hand_patched(bridge.read_text()))


def drifted(world: World) -> None:
    applied(world)
    bridge = world.pkg / BRIDGE
    text = bridge.read_text()
    assert "// (code is full of" in text
    bridge.write_text(text.replace("// (code is full of", "// (edited by hand: code is full of", 1))


def upstream(world: World) -> None:
    world.config.write_text('upstream_dedupe = "defer"\n')
    applied(world)


def held(world: World) -> None:
    applied(world)
    assert world.run("revert")[0] == 0


def extension_absent(world: World) -> None:
    applied(world)
    (world.agent / "extensions" / EXT).unlink()


def unsupported(world: World) -> None:
    shutil.rmtree(world.pkg / "dist")


def error(world: World) -> None:
    (world.pkg / BRIDGE).write_text("export function somethingElse() {\n    return [];\n}\n")


STATES: dict[str, Callable[[World], None]] = {
    "unpatched": lambda world: None,
    "patched": applied,
    "stale": stale,
    "partial": partial,
    "hand-patched": hand,
    "drifted": drifted,
    "upstream": upstream,
    "held": held,
    "extension absent": extension_absent,
    "unsupported": unsupported,
    "error": error,
}


def named_by_plan(world: World, row: dict) -> set[str]:
    """The files status's plan says apply writes or takes out, named as World.files names them."""
    named = set()
    for change in row["plan"]:
        if change["writes"]:
            path = Path(change["path"])
            root, label = (world.pkg, "pkg") if change["layer"] == "dist" else (world.agent, "agent")
            named.add(f"{label}/{path.relative_to(root)}")
    return named


def named_by_dry_run(world: World) -> set[str]:
    _, out = world.run("apply", "--dry-run", "--json")
    doc = json.loads(out)
    named = {f"pkg/{rel}" for row in doc["installs"] for rel in row.get("would_write", [])}
    for row in doc.get("extension", []):
        if row.get("would_write"):
            named.add(f"agent/{Path(row['path']).relative_to(world.agent)}")
    return named


def one_story(world: World, state: str) -> None:
    """Put the install in `state`, then hold status, verify, the dry run and apply to one story."""
    STATES[state](world)

    status_code, status_text = world.run("status")
    (row,) = json.loads(world.run("status", "--json")[1])["installs"]
    verify_code, verify_text = world.run("verify")
    named = named_by_dry_run(world)
    before = world.files()
    apply_code, apply_text = world.run("apply")
    did = changed(before, world.files())

    assert did == named, f"apply changed {sorted(did)}, its dry run named {sorted(named)}\n{apply_text}"
    assert named_by_plan(world, row) == named, row["plan"]  # (status's plan is the dry run's)
    says_apply = "senpi-guard apply" in (row["next"] or "")
    assert says_apply == bool(did) or (not did and apply_code != 0 and says_apply is False), (row, did)
    assert verify_code == status_code, verify_text
    assert any("senpi-guard apply" in step for step in steps_of(verify_text)) == says_apply, verify_text
    if state == "held":  # as the user asked: status is content, and says how to lift the hold
        assert status_code == 0 and says_apply, status_text
    else:
        assert (status_code == 0) == bool(row["as_wanted"]), status_text
