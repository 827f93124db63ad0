"""Proofs begun ahead: an apply starts its extension layer's proof (node in senpi's loader, seconds)
in a thread before the dist layer runs, and the extension layer takes the result when it comes to
need it. The two layers' node processes then run side by side.

A proof begun ahead is only ever taken by the `replay` call with the same key (the rendered file,
node, senpi's loader and runner, dist/'s stamp), reuse and state folder; one nobody took is
cancelled (node killed) and waited for when the step ends (`settle`), so no node outlives it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_flights: dict[tuple, Future] = {}  # begun, not yet taken
_begun: list[tuple[threading.Event, threading.Thread]] = []  # every one begun in the step, taken or not


def begin(key: tuple, prove: Callable[[threading.Event], Any]) -> None:
    """Run `prove(cancel)` in a thread, kept under `key` for `take` (nothing when one is there)."""
    with _lock:
        if key in _flights:
            return
        future: Future = Future()
        cancel = threading.Event()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(prove(cancel))
            except BaseException as exc:  # (the taker raises it, as if it had run the proof itself)
                future.set_exception(exc)

        thread = threading.Thread(target=run, name="senpi-guard-proof-ahead", daemon=True)
        _flights[key] = future
        _begun.append((cancel, thread))
    thread.start()


def take(key: tuple) -> Future | None:
    """The proof begun ahead under `key` (taken: nobody else gets it), or None."""
    with _lock:
        return _flights.pop(key, None)


def settle() -> None:
    """Cancel every proof still running (nobody took it, or its taker was stopped: ^C) and wait for
    each to end (node is killed within ~0.1 s)."""
    with _lock:
        begun = list(_begun)
        _begun.clear()
        _flights.clear()
    for cancel, thread in begun:
        if thread.is_alive():
            cancel.set()
    for _cancel, thread in begun:
        thread.join()


@contextmanager
def ahead_of_time() -> Iterator[None]:
    """A step that may begin proofs ahead: whatever it began and did not take ends with it."""
    try:
        yield
    finally:
        settle()
