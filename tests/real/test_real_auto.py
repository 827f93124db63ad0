"""tags = "auto" on the real senpi 2026.8.22-2: a plugin shaped like the newest omo-senpi stamps, on
every 'ulw' prompt, a large block of a tag the default list does not name (with attributes in its
open tag), a short reminder that is meant to repeat, and a block of a name nobody lists. With the
default list they are all re-sent on every call; with "auto" the large ones are sent once, the
reminder every time, earlier messages never change, and `audit` says what the provider received."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import write_user_config
from realsenpi import SUPPORT, RealSenpi, senpi_guard
from test_real_cli import earlier_messages_kept, text_bytes, within_one_percent

pytestmark = pytest.mark.real

PROMPTS = ("ulw step 0", "ulw step 1", "what changed?", "ulw step 3", "ulw step 4")
ULW = sum(p.startswith("ulw") for p in PROMPTS)
PLUGIN = "directive_auto.js"


def plugin_texts() -> dict[str, str]:
    script = (
        f"const m = await import({json.dumps((SUPPORT / PLUGIN).as_uri())});"
        "console.log(JSON.stringify({execute: m.EXECUTE, reminder: m.REMINDER, notes: m.NOTES}));"
    )
    out = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def count(calls: list[dict], text: str) -> list[int]:
    return [sum(t.count(text) for m in call["messages"] for t in m["texts"]) for call in calls]


def run(full_senpi, tmp_path: Path, isolated_dirs: Path, name: str, settings: str) -> RealSenpi:
    write_user_config(isolated_dirs, f'layers = ["dist", "extension"]\n[patches.directive-dedupe]\n{settings}')
    result = senpi_guard("apply", "--root", full_senpi.package_dir, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    user = RealSenpi(full_senpi, tmp_path / name, Path(os.environ["SENPI_CODING_AGENT_DIR"]), tmp_path / "work")
    for prompt in PROMPTS:
        user.prompt(prompt, plugins=(PLUGIN,))
    return user


def test_auto_sends_large_unlisted_blocks_once_and_leaves_reminders(full_senpi, full_guarded, tmp_path, isolated_dirs):
    texts = plugin_texts()
    listed = run(full_senpi, tmp_path, isolated_dirs, "listed", "")
    auto = run(full_senpi, tmp_path, isolated_dirs, "auto", 'tags = "auto"\n')
    calls = {"listed": listed.recorded_calls(), "auto": auto.recorded_calls()}
    copies_as_listed = [1, 2, 2, 3, 4]  # one more per 'ulw' prompt, every one re-sent
    assert count(calls["listed"], texts["execute"]) == copies_as_listed
    assert count(calls["listed"], texts["notes"]) == copies_as_listed
    assert count(calls["auto"], texts["execute"]) == [1] * len(PROMPTS)
    assert count(calls["auto"], texts["notes"]) == [1] * len(PROMPTS)
    assert count(calls["auto"], texts["reminder"]) == copies_as_listed  # 165 bytes: below 512, kept
    last = calls["auto"][-1]
    for name in ("omo-senpi-ulw-execute", "team-notes"):
        marker = f"[{name}: unchanged, see the earlier copy; it still applies]"
        assert count([last], marker) == [ULW - 1]
    assert earlier_messages_kept(calls["auto"])
    total = {name: sum(map(text_bytes, c)) for name, c in calls.items()}
    assert total["auto"] < 0.5 * total["listed"], total
    print(f"\nauto vs default list, {len(PROMPTS)} calls: {total['listed']:,} -> {total['auto']:,} bytes")

    result = senpi_guard("audit", "--root", full_senpi.package_dir, "--json", auto.session_file())
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)["sessions"]
    for row, call in zip(report["turns"], calls["auto"], strict=True):
        assert within_one_percent(row["bytes"]["both"], text_bytes(call)), (row["bytes"], text_bytes(call))
