"""The extension as the user sees it inside the real senpi 2026.8.22-2, in RPC mode (where extension
UI calls are on the protocol) and in print mode: the footer status and /senpi-guard say exactly what
the provider did not receive (compared with a session without the extension), the UI code changes
nothing the provider receives (compared with the dedupe alone), print mode stays silent, the budget
warns once past warn_at of a small test window and block_at stops the call before the provider
receives anything, saying why on stderr (print) and in a notification (RPC)."""

from __future__ import annotations

import json
import math
import os
import queue
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import HANG_S, kb, write_user_config
from realsenpi import SUPPORT, RealSenpi, read_jsonl, senpi_guard

from senpi_guard.core.patch import definition
from senpi_guard.io.config import Config

pytestmark = pytest.mark.real

PATCH = definition.load("directive-dedupe")
PROMPTS = ("ulw step 0", "ulw step 1", "what changed?", "ulw step 3", "ulw step 4")
RULES = (f"rule {i:03d}: work until the task is verified end to end; report evidence." for i in range(400))
DIRECTIVE = "<ultrawork-mode>\n" + "\n".join(RULES) + "\n</ultrawork-mode>"  # as directive_common.js stamps it
# Logs what the extension reads besides the messages: the system prompt and senpi's own usage figure.
PROBE = """import { appendFileSync } from "node:fs";
export default function probe(pi) {
    pi.on("context", (event, ctx) => { appendFileSync(process.env.SG_PROBE_LOG, JSON.stringify({
        system: Buffer.byteLength(ctx.getSystemPrompt()), usage: ctx.getContextUsage() ?? null }) + "\\n"); });
}
"""


def text_bytes(call: dict) -> int:
    return sum(len(t.encode()) for m in call["messages"] for t in m["texts"])


def copies(call: dict) -> int:
    return sum(t.count(DIRECTIVE) for m in call["messages"] for t in m["texts"])


class Rpc:
    """One real `senpi --mode rpc` process of a RealSenpi user: JSON lines in, events out."""

    def __init__(
        self, user: RealSenpi, extensions: list[Path], env: dict[str, str] | None = None, model: str = "rec/rec-1"
    ):
        user.home.mkdir(parents=True, exist_ok=True)
        user.cwd.mkdir(parents=True, exist_ok=True)
        argv = [str(user.install.senpi), "--mode", "rpc", "--model", model, "--session-dir", str(user.sessions)]
        for extension in [SUPPORT / "recording_provider.js", *extensions]:
            argv += ["-e", str(extension)]
        self.proc = subprocess.Popen(
            argv,
            cwd=user.cwd,
            env={**user.env(), **(env or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.events: list[dict] = []
        self.count = 0
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(line) for line in self.proc.stdout], daemon=True).start()

    def _until(self, done, timeout: float = HANG_S) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    raise AssertionError(f"senpi --mode rpc ended: {self.proc.stderr.read()[-800:]}") from None
                continue
            self.events.append(json.loads(line))
            if done(self.events[-1]):
                return
        raise AssertionError("senpi --mode rpc did not answer in time")

    def send(self, command: dict) -> None:
        """One command; a prompt waits for its agent_end, an extension command for its response and
        its notification, anything else for its response."""
        self.count += 1
        ident, start = str(self.count), len(self.events)
        self.proc.stdin.write(json.dumps({**command, "id": ident}) + "\n")
        self.proc.stdin.flush()
        text = command.get("message", "")

        def done(_event: dict) -> bool:
            new = self.events[start:]
            if command["type"] == "prompt" and not text.startswith("/"):
                return any(e.get("type") == "agent_end" for e in new)
            answered = any(e.get("type") == "response" and e.get("id") == ident for e in new)
            return answered and (
                not text.startswith("/")
                or any(e.get("method") == "notify" and "senpi-guard" in e.get("message", "") for e in new)
            )

        self._until(done)

    def prompt(self, text: str) -> None:
        self.send({"type": "prompt", "message": text})

    def close(self) -> str:
        self.proc.stdin.close()
        self.proc.wait(timeout=HANG_S)
        return self.proc.stderr.read()

    def ui(self, method: str) -> list[dict]:
        return [e for e in self.events if e.get("type") == "extension_ui_request" and e.get("method") == method]

    def statuses(self) -> list[str]:
        return [e.get("statusText") for e in self.ui("setStatus") if e.get("statusKey") == "senpi-guard"]

    def notes(self) -> list[dict]:
        return [e for e in self.ui("notify") if "senpi-guard" in e.get("message", "")]


@pytest.fixture
def rendered(tmp_path):
    def render(name: str = "ext", **settings) -> Path:
        path = tmp_path / f"{name}.js"
        path.write_text(PATCH.render_extension(Config().with_patch("directive-dedupe", **settings)), "utf-8")
        return path

    return render


def dedupe_only(tmp_path: Path, extension: Path) -> Path:
    """The same rendered dedupe without its status, command and budget: a context handler alone."""
    path = tmp_path / "dedupe_only.js"
    path.write_text(
        f"import {{ __senpiGuardDedupeMessages }} from {json.dumps(str(extension))};\n"
        "export default function (pi) {\n"
        '    pi.on("context", (event) => { const m = __senpiGuardDedupeMessages(event.messages);\n'
        "        return m === null ? undefined : { messages: m }; });\n}\n",
        "utf-8",
    )
    return path


def user_at(full_senpi, tmp_path: Path, name: str, window: int | None = None) -> RealSenpi:
    extra = {"SENPI_GUARD_REC_WINDOW": str(window)} if window else {}
    return RealSenpi(
        full_senpi,
        tmp_path / name,
        Path(os.environ["SENPI_CODING_AGENT_DIR"]),
        tmp_path / "work",
        extra_env={**extra, "SG_PROBE_LOG": str(tmp_path / name / "probe.jsonl")},
    )


def rpc_session(full_senpi, tmp_path, name: str, extensions: list[Path], prompts=PROMPTS) -> tuple[RealSenpi, Rpc]:
    user = user_at(full_senpi, tmp_path, name)
    rpc = Rpc(user, [SUPPORT / "directive_prepend.js", *extensions])
    for text in prompts:
        rpc.prompt(text)
    return user, rpc


def test_status_and_command_say_what_the_provider_did_not_receive(full_senpi, rendered, tmp_path):
    extension = rendered()
    plain_user, plain = rpc_session(full_senpi, tmp_path, "plain", [])
    plain.close()
    user, rpc = rpc_session(full_senpi, tmp_path, "ext", [extension])
    rpc.prompt("/senpi-guard")
    rpc.close()
    bare_user, bare = rpc_session(full_senpi, tmp_path, "bare", [dedupe_only(tmp_path, extension)])
    bare.close()

    received, without, bare_calls = user.recorded_calls(), plain_user.recorded_calls(), bare_user.recorded_calls()
    assert len(received) == len(without) == len(PROMPTS)
    # the status, command and budget code change nothing the provider receives
    assert received == bare_calls
    # each status line: what the calls so far did not send, against the same session without the extension
    expected = ["senpi-guard: on, no repeats yet"]
    saved = repeats = 0
    for got, plain_call in zip(received, without, strict=True):
        saved += text_bytes(plain_call) - text_bytes(got)
        repeats += copies(plain_call) - copies(got)
        expected.append(
            f"senpi-guard: {repeats} repeat{'s' * (repeats > 1)}, {kb(saved)} not re-sent"
            if repeats
            else "senpi-guard: on, no repeats yet"
        )
    assert repeats == 0 + 1 + 1 + 2 + 3 and saved > 7 * 28_000
    assert rpc.statuses() == expected
    (report,) = [n["message"] for n in rpc.notes() if n["message"].startswith("senpi-guard, this session")]
    assert f"not re-sent: {repeats} copies, {saved:,} bytes" in report
    assert f"<ultrawork-mode>: {repeats} copies" in report and f"{len(PROMPTS)} calls with a reply" in report
    assert f"dist layer: absent for this senpi (2026.8.22-2 at {full_senpi.package_dir.resolve()})" in report
    (tmp_path / "status-line.txt").write_text(rpc.statuses()[-1] + "\n\n" + report + "\n", "utf-8")

    # print mode: silent (stdout is the reply, nothing of ours on stderr), the same bytes sent
    printed = user_at(full_senpi, tmp_path, "print")
    outputs = [printed.prompt(text, plugins=("directive_prepend.js", str(extension))) for text in PROMPTS[:3]]
    assert all(o.stdout.strip() == "ok" and "senpi-guard" not in o.stderr for o in outputs)
    assert printed.recorded_calls() == received[:3]


@pytest.fixture
def dist_layer(full_senpi, isolated_dirs, monkeypatch):
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    write_user_config(isolated_dirs, 'layers = ["dist"]\n')
    result = senpi_guard("apply", "--root", full_senpi.package_dir, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    yield
    result = senpi_guard("revert", "--root", full_senpi.package_dir, "--json")
    assert result.returncode == 0, result.stdout + result.stderr


def test_command_finds_the_dist_layer_of_this_senpi(full_senpi, dist_layer, rendered, tmp_path):
    rpc = Rpc(user_at(full_senpi, tmp_path, "dist"), [rendered()])
    rpc.prompt("/senpi-guard")
    rpc.close()
    (report,) = [n["message"] for n in rpc.notes()]
    assert f"dist layer: present for this senpi (2026.8.22-2 at {full_senpi.package_dir.resolve()})" in report
    assert f"claude-sdk-oauth/prompt-bridge.js: directive-dedupe v{PATCH.version} (prompt)" in report
    assert f"extension layer: directive-dedupe v{PATCH.version} (config " in report


BIG = 40_000  # bytes of each large prompt (no directive: the context grows by this much per prompt)


def big(i: int) -> str:
    return f"part {i}: " + "".join(f"line {i}.{j:05d} of a long paste\n" for j in range(BIG // 28))[:BIG]


def expected_tokens(call: dict, probe: dict) -> int:
    """The figure the extension reports: UTF-8 bytes of the messages as sent plus the system prompt, / 4
    (senpi's own figure, from before the rewrite, is not it)."""
    ours = math.ceil((text_bytes(call) + probe["system"]) / 4)
    assert probe["usage"]["tokens"] < ours
    return ours


def test_budget_warns_once_past_warn_at(full_senpi, rendered, tmp_path):
    # (three prompts: past about 85% of this window senpi's own compaction starts, which is its business)
    window = 40_000
    probe = tmp_path / "probe.js"
    probe.write_text(PROBE, "utf-8")
    user = user_at(full_senpi, tmp_path, "warn", window)
    rpc = Rpc(user, [rendered("warn", **{"budget.warn_at": 0.5}), probe])
    for i in range(3):
        rpc.prompt(big(i))
    rpc.close()
    calls, probes = user.recorded_calls(), read_jsonl(user.root / "probe.jsonl")
    # (a compaction senpi starts after the third call runs the handlers once more: not a call)
    tokens = [expected_tokens(c, p) for c, p in zip(calls, probes[: len(calls)], strict=True)]
    first = next(i for i, t in enumerate(tokens) if t >= 0.5 * window)
    assert first == 1 and tokens[2] >= 0.5 * window  # (two calls past it, one warning)
    (note,) = rpc.notes()
    assert note["notifyType"] == "warning"
    share = tokens[first] * 100 // window
    assert note["message"] == (
        f"senpi-guard: this call carries ≈{tokens[first]:,} tokens, {share}% "
        f"of rec-1's {window:,}-token context window (budget.warn_at = 0.5). Run /compact to "
        "shrink the context before it fills up (told once per session)."
    )
    (tmp_path / "warning.txt").write_text(json.dumps({"note": note["message"], "probes": probes}) + "\n", "utf-8")

    # the default, 0.8, in print mode: one line on stderr when a call passes it
    printed = user_at(full_senpi, tmp_path, "warn-print", window)
    outputs = [printed.prompt(big(i), plugins=(str(rendered()),)) for i in range(3)]
    told = [[x for x in o.stderr.splitlines() if x.startswith("senpi-guard:")] for o in outputs]
    assert [len(t) for t in told] == [0, 0, 1]
    assert "% of rec-1's 40,000-token context window (budget.warn_at = 0.8)" in told[2][0]


def test_block_at_stops_the_call_before_the_provider_receives_it(full_senpi, rendered, tmp_path):
    window = 40_000
    extension = rendered("block", **{"budget.block_at": 0.5})
    probe = tmp_path / "probe.js"
    probe.write_text(PROBE, "utf-8")

    # print mode: the second prompt passes half the window: nothing reaches the provider, stderr says why
    user = user_at(full_senpi, tmp_path, "print-block", window)
    user.prompt(big(0), plugins=(str(extension), str(probe)))
    argv = [str(full_senpi.senpi), "-p", "--model", "rec/rec-1", "--session-dir", str(user.sessions), "--continue"]
    for plugin in (SUPPORT / "recording_provider.js", extension, probe):
        argv += ["-e", str(plugin)]
    stopped = subprocess.run(
        [*argv, big(1)], cwd=user.cwd, env=user.env(), capture_output=True, text=True, timeout=HANG_S, check=False
    )
    assert len(user.recorded_calls()) == 1  # the provider received nothing for the stopped call
    (line,) = [x for x in stopped.stderr.splitlines() if x.startswith("senpi-guard:")]
    probes = read_jsonl(user.root / "probe.jsonl")
    system = probes[-1]["system"]
    session_text = sum(len(t.encode()) for t in (big(0), "ok", big(1)))
    tokens = math.ceil((session_text + system) / 4)
    assert line == (
        f"senpi-guard: stopped this call before it was sent: it would carry ≈{tokens:,} tokens, "
        f"{tokens * 100 // window}% of rec-1's {window:,}-token context window (budget.block_at = 0.5). "
        "Run /compact to shrink the context, then send the prompt again."
    )
    assert stopped.returncode != 0 and "DOMException" not in stopped.stderr  # (no crash: senpi reports the abort)
    (tmp_path / "block-print.txt").write_text(stopped.stderr, "utf-8")

    # RPC: a notification each time, the process lives on, a new session starts afresh
    user = user_at(full_senpi, tmp_path, "rpc-block", window)
    rpc = Rpc(user, [extension])
    rpc.prompt(big(0))
    rpc.prompt(big(1))
    rpc.prompt("and now?")
    rpc.send({"type": "new_session"})
    rpc.prompt("a new start")
    stderr = rpc.close()
    calls = user.recorded_calls()
    assert [c["messages"][-1]["texts"][-1] for c in calls] == [big(0), "a new start"]
    assert [n["notifyType"] for n in rpc.notes()] == ["error", "error"]
    assert all("stopped this call before it was sent" in n["message"] for n in rpc.notes())
    assert "DOMException" not in stderr
    ends = [e for e in rpc.events if e.get("type") == "agent_end"]
    assert [e["messages"][-1].get("stopReason") for e in ends] == ["stop", "aborted", "aborted", "stop"]
