"""Repeated events on the real senpi 2026.8.22-2: senpi's own loop guard wraps its notice in
<system-reminder> and says it again, byte for byte, each time the model loops again. A repeat is
news (it happened again), not a directive that still applies, so neither the default tag list nor
"auto" collapses it, in either layer, while the repeated <ultrawork-mode> directive is still sent
once. A list that names system-reminder is obeyed. The notice is the real emitter's: a provider that
loops the way a stuck model does makes the real loop guard fire, once per prompt."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import write_user_config
from realsenpi import SUPPORT, RealSenpi, read_jsonl, senpi_guard

pytestmark = pytest.mark.real

PROMPTS = ("ulw loop 1", "ulw loop 2", "ulw what now?")
LOOPS = 2  # (the prompts that say "loop")
PLUGINS = ("looping_provider.js", "directive_prepend.js")
NOTICE = "dist/core/extensions/builtin/loop-guard/notice.js"


def marker(tag: str) -> str:
    return f"[{tag}: unchanged, see the earlier copy; it still applies]"


def real_texts(full_senpi) -> dict[str, str]:
    """The loop guard's notice for three identical `read` calls, as the installed senpi builds it,
    and the directive the plugin stamps."""
    script = (
        f"const n = await import({json.dumps((full_senpi.package_dir / NOTICE).as_uri())});"
        f"const d = await import({json.dumps((SUPPORT / 'directive_common.js').as_uri())});"
        "const notice = n.buildLoopGuardReminder({kind: 'identical', toolName: 'read', count: 3, fingerprint: ''});"
        "console.log(JSON.stringify({notice, directive: d.DIRECTIVE}));"
    )
    node = str(full_senpi.node_bin / "node")
    out = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def resent(full_senpi, session: Path) -> str:
    """The session as the dist layer sends it on a full re-send (senpi's own code, patched)."""
    script, pkg = SUPPORT / "session_resend.mjs", full_senpi.package_dir
    out = subprocess.run(
        [str(full_senpi.node_bin / "node"), str(script), str(pkg), str(session)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return "".join(json.loads(out.stdout)["texts"])


# settings, then how many copies of the notice the last call sends in full
CASES = {
    "default": ("", 2),
    "auto": ('tags = "auto"\n', 2),
    "listed": ('tags = ["ultrawork-mode", "system-reminder"]\n', 1),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_repeated_loop_guard_notice_is_sent_as_itself(full_senpi, full_guarded, tmp_path, isolated_dirs, case):
    settings, copies = CASES[case]
    write_user_config(isolated_dirs, f'layers = ["dist", "extension"]\n[patches.directive-dedupe]\n{settings}')
    applied = senpi_guard("apply", "--root", full_senpi.package_dir, "--json")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    texts = real_texts(full_senpi)
    notice, directive = texts["notice"], texts["directive"]
    user = RealSenpi(full_senpi, tmp_path / case, Path(os.environ["SENPI_CODING_AGENT_DIR"]), tmp_path / "work")
    user.cwd.mkdir(parents=True)
    (user.cwd / "notes.txt").write_text("nothing new here\n")
    for prompt in PROMPTS:
        user.prompt(prompt, model="loop/loop-1", plugins=PLUGINS)

    # the real loop guard fired once per prompt, the same text both times, stored by senpi
    stored = [
        e["content"]
        for e in read_jsonl(user.session_file())
        if e.get("type") == "custom_message" and e.get("customType") == "loop-guard:notice"
    ]
    assert stored == [notice] * LOOPS

    # the extension layer: what the provider received on the last call
    last = "".join(t for m in user.recorded_calls()[-1]["messages"] for t in m["texts"])
    assert last.count(notice) == copies
    assert last.count(marker("system-reminder")) == LOOPS - copies
    assert last.count(directive) == 1 and last.count(marker("ultrawork-mode")) == len(PROMPTS) - 1

    # the dist layer: a full re-send of the stored session through the patched buildPromptBlocks
    sent = resent(full_senpi, user.session_file())
    assert sent.count(notice) == copies
    assert sent.count(directive) == 1 and sent.count(marker("ultrawork-mode")) == len(PROMPTS) - 1
