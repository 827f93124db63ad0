"""layers/extension_proofs: a proof through senpi's loader is reused while every byte it loaded is
the same, and never once one of them, node's version or our extension changed."""

from __future__ import annotations

import hashlib

from senpi_guard.layers import extension_proofs as proofs
from senpi_guard.layers.extension_replay import _keys
from senpi_guard.prove.verify import VerifyReport


def parts(**changed) -> dict:
    base = {
        "extension": "e" * 64,
        "node": ["/usr/bin/node", "v24.1.0"],
        "harness": "h",
        "files": ["c"],
        "host": {"loader": ["/p/loader.js", "l"], "runner": ["/p/runner.js", "r"]},
        "dist": [1, 2, 3, 4, 5],
    }
    return {**base, **changed}


def test_the_content_key_leaves_out_dist_s_identity_and_node_s_path_only():
    key, content = _keys(parts())
    moved_key, moved_content = _keys(parts(dist=[9, 9, 9, 9, 9], node=["/other/node", "v24.1.0"]))
    assert moved_key != key and moved_content == content  # a reinstall of the same bytes: same content
    assert _keys(parts(node=["/usr/bin/node", "v24.2.0"]))[1] != content  # a new node version
    assert _keys(parts(extension="f" * 64))[1] != content  # our extension's bytes
    assert _keys(parts(files=["d"]))[1] != content  # the checks or fixtures


def passing(imported: dict[str, str] | None) -> VerifyReport:
    return VerifyReport(True, [], 41, {"host": "senpi", proofs.IMPORTED: imported}, "v24.1.0")


def test_a_proof_holds_while_every_file_it_loaded_is_unchanged(tmp_path):
    loaded = tmp_path / "dep.js"
    loaded.write_bytes(b"export const x = 1;\n")
    store = proofs.ContentProofs(tmp_path / "state" / "extension-proofs.json")
    kept = store.put("k", passing({str(loaded): hashlib.sha256(loaded.read_bytes()).hexdigest()}))
    assert proofs.IMPORTED not in kept.stats  # (the list is kept beside, never in a report)
    again = proofs.ContentProofs(tmp_path / "state" / "extension-proofs.json")  # (a later run)
    assert again.get("k") is not None and again.get("other") is None
    loaded.write_bytes(b"export const x = 2;\n")  # one byte of an imported file
    assert proofs.ContentProofs(tmp_path / "state" / "extension-proofs.json").get("k") is None
    loaded.unlink()
    assert proofs.ContentProofs(tmp_path / "state" / "extension-proofs.json").get("k") is None


def test_without_the_list_of_what_it_loaded_nothing_is_remembered(tmp_path):
    store = proofs.ContentProofs(tmp_path / "extension-proofs.json")
    store.put("k", passing(None))  # (node < 22.15: no module.registerHooks)
    assert proofs.ContentProofs(tmp_path / "extension-proofs.json").get("k") is None
    failing = VerifyReport(False, [], 41, {proofs.IMPORTED: {str(tmp_path / "x"): "0"}}, "v24.1.0")
    store.put("f", failing)
    assert proofs.ContentProofs(tmp_path / "extension-proofs.json").get("f") is None


def test_provers_side_by_side_lose_no_proof(tmp_path, monkeypatch):
    """The watcher's re-proof beside an apply's proof: both files (the proofs and what each loaded)
    are read and written as one, so neither loses the other's entry."""
    import threading

    from senpi_guard.io import locks

    monkeypatch.setattr(locks, "MEMO_WAIT_S", 120.0)  # (the lock is under test, not its bound: a slow disk)

    loaded = tmp_path / "dep.js"
    loaded.write_bytes(b"export const x = 1;\n")
    imported = {str(loaded): hashlib.sha256(loaded.read_bytes()).hexdigest()}
    start = threading.Barrier(3)

    def prover(name: str) -> None:
        store = proofs.ContentProofs(tmp_path / "extension-proofs.json")
        start.wait()
        for n in range(15):
            store.put(f"{name}-{n}", passing(imported))

    threads = [threading.Thread(target=prover, args=(name,)) for name in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    later = proofs.ContentProofs(tmp_path / "extension-proofs.json")
    assert [f"{a}-{n}" for a in "abc" for n in range(15) if later.get(f"{a}-{n}") is None] == []
