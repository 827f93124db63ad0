"""audit's node process (audit.mjs), spoken to one JSON line at a time and bounded like the verify
harness (prove/verify.run_script): no single write or wait for a reply lasts more than `timeout`
(verify_timeout) and `cancel` kills node within ~0.1 s. The harness is one-shot; this one serves
every session, so the bound is per step, not per run. Each reply line carries a tag only this run
knows: whatever senpi's code prints on stdout (at import or per call) is kept apart, not parsed."""

from __future__ import annotations

import json
import queue
import secrets
import subprocess
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from senpi_guard.errors import FatalError
from senpi_guard.prove.verify import Cancelled, error_lines

STRAY_LINES = 3  # the first lines senpi's code printed on stdout, kept to name them in an error


def _text(data: bytes, limit: int = 200) -> str:
    return data.decode("utf-8", "replace").strip()[:limit]


class NodeServer:
    """`argv` running with the job as its first stdin line; `where` names the install in errors."""

    def __init__(
        self,
        argv: list[str],
        job: dict[str, Any],
        timeout: float,
        where: str,
        cancel: threading.Event | None = None,
        popen_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.tag = f"senpi-guard-reply-{secrets.token_hex(8)}:".encode()
        self.timeout, self.where, self.cancel = timeout, where, cancel
        self.replies: queue.Queue[str] = queue.Queue()
        self.stray: list[str] = []
        self.stderr_tail: deque[str] = deque(maxlen=8)
        self.stderr_errors: list[str] = []  # (node's error line comes before its stack: kept apart)
        self.failure: FatalError | None = None
        self.since: float | None = None  # when the step under way (a write, a wait) began
        self.doing = ""
        self.closed = threading.Event()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=1 << 20,
            **(popen_kwargs or {}),
        )
        self.threads = [threading.Thread(target=run, daemon=True) for run in (self._read, self._drain, self._watch)]
        for thread in self.threads:
            thread.start()
        try:
            self.send_raw(json.dumps({**job, "replyTag": self.tag.decode()}).encode(), "while reading its job")
        except BaseException:
            self.close(ok=False)
            raise

    def _read(self) -> None:
        for line in self.proc.stdout:
            at = line.find(self.tag)
            if at != 0 and len(self.stray) < STRAY_LINES and (printed := _text(line[:at] if at > 0 else line)):
                self.stray.append(printed)
            if at >= 0:
                self.replies.put(line[at + len(self.tag) :].decode("utf-8", "replace"))
        self.replies.put("")

    def _drain(self) -> None:  # read all along: a full stderr pipe would stop node
        for line in self.proc.stderr:
            if text := _text(line, 300):
                self.stderr_tail.append(text)
                if len(self.stderr_errors) < 3 and error_lines([text]):
                    self.stderr_errors.append(text)

    def _watch(self) -> None:
        while not self.closed.wait(0.1):
            if self.cancel is not None and self.cancel.is_set():
                self._stop(Cancelled(f"stopped during the audit ({self.where})"))
            since = self.since
            if since is not None and time.monotonic() - since > self.timeout:
                self._stop(
                    FatalError(
                        f"the audit timed out after {self.timeout:g}s in node {self.doing} ({self.where}): "
                        "its code may loop forever; check that install with `senpi-guard verify --root`, or "
                        "raise verify_timeout in the config"
                    )
                )

    def _stop(self, failure: FatalError) -> None:
        if self.failure is None:
            self.failure = failure
        self.proc.kill()

    @contextmanager
    def _step(self, doing: str) -> Iterator[None]:
        self.doing, self.since = doing, time.monotonic()
        try:
            yield
        except OSError as exc:  # a broken pipe: node is gone (ended, or killed by the watch)
            raise self.ended() from exc
        finally:
            self.since = None

    def send_raw(self, line: bytes, doing: str = "while reading a request") -> None:
        with self._step(doing):
            self.proc.stdin.write(line + b"\n")

    def reply(self, doing: str = "while measuring a call") -> dict[str, Any]:
        with self._step(doing):
            self.proc.stdin.flush()
            line = self.replies.get()
        if not line:
            raise self.ended()
        try:
            return json.loads(line)
        except ValueError as exc:
            raise FatalError(
                f"the audit's node process answered with no JSON ({self.where}): {line.strip()[:120]!r}"
            ) from exc

    def ended(self) -> FatalError:
        """Why node is gone: the watch's reason, else its exit, what it printed and its last error line."""
        if self.failure is not None:
            return self.failure
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self.threads[1].join(1)  # the rest of stderr
        how = "still running" if code is None else f"killed by signal {-code}" if code < 0 else f"exit {code}"
        said = f"; senpi's code printed to stdout: {' | '.join(self.stray)!r}" if self.stray else ""
        said_err = self.stderr_errors or list(self.stderr_tail)[-1:]
        tail = f": {said_err[0]}" if said_err else ""
        return FatalError(f"the audit's node process ended early ({how}, {self.where}){tail}{said}")

    def close(self, ok: bool) -> None:
        """Let node finish (ok) or kill it at once (an error, ^C: node must not outlive the audit)."""
        try:
            if ok and self.proc.poll() is None:
                with self._step("while finishing"):
                    self.proc.stdin.close()
                self.proc.wait(timeout=self.timeout)
        except (FatalError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.closed.set()
            with suppress(OSError):  # (what is still buffered for a node that is gone is dropped)
                self.proc.stdin.close()
