"""The caches two runs write side by side (a `status` in one terminal, the watcher's re-patch in
another): what one added is still there after the other saved."""

from __future__ import annotations

import threading

from senpi_guard import probes
from senpi_guard.io import memo


def test_two_runs_probing_with_different_environments_keep_both_answers(tmp_path, monkeypatch):
    cache = tmp_path / "probes.json"
    first, second = probes.ProbeCache.load(cache, 600), probes.ProbeCache.load(cache, 600)
    monkeypatch.setenv("HOME", "/home/a")
    first.put(["npm", "root", "-g"], None)
    key_a = probes.ProbeCache.key(["npm", "root", "-g"])
    monkeypatch.setenv("HOME", "/home/b")  # (the other run's environment: another key)
    second.put(["npm", "root", "-g"], None)
    first.save()
    second.save()
    kept = probes.ProbeCache.load(cache, 600)
    assert kept.get(["npm", "root", "-g"]) == (True, None)
    monkeypatch.setenv("HOME", "/home/a")
    assert probes.ProbeCache.key(["npm", "root", "-g"]) == key_a and kept.get(["npm", "root", "-g"]) == (True, None)


def test_memo_writers_side_by_side_lose_no_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "cache" / "senpi-guard").mkdir(parents=True, mode=0o700)
    start = threading.Barrier(3)

    def writer(kind: str) -> None:
        start.wait()
        for n in range(12):
            memo.remember(kind, str(n), n)

    threads = [threading.Thread(target=writer, args=(kind,)) for kind in ("a", "b", "c")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [(k, n) for k in "abc" for n in range(12) if memo.recall(k, str(n)) != n] == []
