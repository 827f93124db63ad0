"""prove/replays.py directly: a replay is remembered by everything its result depends on, and only a
passing one is kept on disk."""

from __future__ import annotations

from senpi_guard.core.patch import definition
from senpi_guard.io.config import Config
from senpi_guard.prove.replays import ReplayMemo, replay_key
from senpi_guard.prove.verify import Failure, ModulePair, VerifyReport

PATCH = definition.load("directive-dedupe")


def pairs(tmp_path, candidate: bytes) -> dict[str, ModulePair]:
    module = tmp_path / "dist" / "prompt-bridge.js"
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_bytes(b"export function buildPromptBlocks(c) { return c; }")
    if not (module.parent / "tools.js").exists():
        (module.parent / "tools.js").write_bytes(b"export const x = 1;")
    return {"prompt": ModulePair(module, "buildPromptBlocks", module.read_bytes(), candidate)}


def test_the_key_follows_every_input(tmp_path):
    base = replay_key(PATCH, Config(), tmp_path, pairs(tmp_path, b"a"))
    assert replay_key(PATCH, Config(), tmp_path, pairs(tmp_path, b"a")) == base
    assert replay_key(PATCH, Config(), tmp_path, pairs(tmp_path, b"b")) != base  # the patched bytes
    other_tags = Config().with_patch("directive-dedupe", tags=["ultrawork-mode"])
    assert replay_key(PATCH, other_tags, tmp_path, pairs(tmp_path, b"a")) != base  # the settings
    (tmp_path / "dist" / "tools.js").write_bytes(b"export const x = 2;")
    assert replay_key(PATCH, Config(), tmp_path, pairs(tmp_path, b"a")) != base  # a script beside it


def test_only_a_passing_replay_is_kept_on_disk(tmp_path):
    memo = ReplayMemo(tmp_path / "replays.json")
    memo.put("good", VerifyReport(True, [], 7, {"x": 1}, "v24"))
    memo.put("bad", VerifyReport(False, [Failure("f", "c", "d")], 7, {}, "v24"))
    later = ReplayMemo(tmp_path / "replays.json")  # another run
    hit = later.get("good", stored=True)
    assert hit is not None and hit.ok and hit.checks_run == 7 and hit.reused_from is not None
    assert later.get("bad", stored=True) is None and later.get("good", stored=False) is None
    assert memo.get("bad", stored=False).ok is False  # (within the run, a failure is remembered too)


def test_writers_side_by_side_lose_no_entry(tmp_path, monkeypatch):
    """A `verify` beside the watcher: each reads, adds and writes the file; the folder's lock keeps
    one from writing over what the other added in between."""
    import threading

    from senpi_guard.io import locks

    monkeypatch.setattr(locks, "MEMO_WAIT_S", 120.0)  # (the lock is under test, not its bound: a slow disk)

    start = threading.Barrier(3)

    def writer(name: str) -> None:
        memo = ReplayMemo(tmp_path / "replays.json")
        start.wait()
        for n in range(20):
            memo.put(f"{name}-{n}", VerifyReport(True, [], 1, {}, "v24"))

    threads = [threading.Thread(target=writer, args=(name,)) for name in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    later = ReplayMemo(tmp_path / "replays.json")
    lost = [f"{name}-{n}" for name in "abc" for n in range(20) if later.get(f"{name}-{n}", stored=True) is None]
    assert lost == []
