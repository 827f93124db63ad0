"""Patches that share a file, in-process on the sample package: the house orders its patches, finds
each one's targets a file defines, composes a file from its original through every patch on it
(each other patch as its header records it), refuses a file carrying another version of a patch,
settings it cannot read back or a patch it has not loaded, and proves the other patches on a
composed file before it is written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from layerkit import BRIDGE, dedupe, extra_patch

from senpi_guard.core.patch import apply
from senpi_guard.core.patch.classify import State
from senpi_guard.demo import sample
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import house
from senpi_guard.layers.dist import Reconciler
from senpi_guard.layers.house import House


@pytest.fixture
def two(store: Store) -> tuple[Reconciler, Reconciler]:
    """directive-dedupe's and prompt-blocks' reconcilers, one house: both patch the bridge."""
    shared = House([dedupe(), extra_patch("prompt-blocks")])
    return tuple(Reconciler(p, Config(), store, house=shared) for p in shared.patches)


def base_of(install: Install) -> tuple[Path, bytes]:
    path = install.package_dir / BRIDGE
    return path, path.read_bytes()


def reheader(data: bytes, name: str, **changes: object) -> bytes:
    """`data` with patch `name`'s entry in its header changed (as another senpi-guard wrote it)."""
    header = apply.read_file_header(data)
    entries = tuple(e._replace(**changes) if e.name == name else e for e in header.entries)
    return data.replace(header.line().encode(), header._replace(entries=entries).line().encode(), 1)


def test_the_house_orders_its_patches_and_names_each_function_once():
    blocks, text, stream = (extra_patch(n) for n in ("prompt-blocks", "prompt-text", "prompt-stream"))
    shared = House([blocks, dedupe(), stream, text])
    assert [p.name for p in shared.patches] == ["directive-dedupe", "prompt-text", "prompt-stream", "prompt-blocks"]
    assert shared.functions.count("buildPromptBlocks") == 1
    assert set(shared.functions) == {t.function for p in shared.patches for t in p.targets}
    assert shared.with_patch(shared.by_name["prompt-text"]) is shared
    other = extra_patch("prompt-text")
    assert shared.with_patch(other).by_name["prompt-text"] is other
    assert (
        House.around(blocks).by_name["prompt-blocks"] is blocks and "directive-dedupe" in House.around(blocks).by_name
    )


def test_a_house_around_a_patch_is_that_patch_alone_when_the_others_do_not_load(monkeypatch, tmp_path):
    blocks = extra_patch("prompt-blocks")
    monkeypatch.setenv("SENPI_GUARD_EXTRA_PATCHES", str(tmp_path / "not-a-folder"))
    assert House.around(blocks).patches == (blocks,)


def test_steps_are_the_targets_a_file_defines_in_the_houses_order(install):
    shared = House([extra_patch("prompt-blocks"), extra_patch("prompt-text"), dedupe()])
    _, base = base_of(install)
    configs = {p.name: Config().with_patch(p.name) for p in shared.patches}
    steps, tree = shared.steps(base, lambda p: configs[p.name], lambda p: False)
    assert tree is not None and tree.root_node.text == base  # (the edits reuse it: the file is parsed once)
    assert [(s.patch.name, s.target.function) for s in steps] == [
        ("directive-dedupe", "buildPromptBlocks"),
        ("prompt-blocks", "buildPromptBlocks"),
    ]  # (contentToText is not in this file; dedupe's other targets are in other files)
    assert all(s.config is configs[s.patch.name] for s in steps)
    skipped, _ = shared.steps(base, lambda p: configs[p.name], lambda p: p.name == "prompt-blocks")
    assert [s.patch.name for s in skipped] == ["directive-dedupe"]
    filler = (install.package_dir / "dist/core/agent/module0.js").read_bytes()
    assert b"buildPromptBlocks" in filler and shared.steps(filler, configs.get, lambda p: False)[0] == []


def test_a_file_that_does_not_parse_gives_a_step_to_every_patch_it_mentions():
    shared = House([extra_patch("prompt-blocks"), dedupe()])
    broken = b"export function buildPromptBlocks( {\n"
    steps, tree = shared.steps(broken, lambda p: Config(), lambda p: False)
    assert tree is None  # (the edit says where it breaks)
    assert [s.patch.name for s in steps] == ["directive-dedupe", "prompt-blocks"]


def test_a_file_is_composed_from_its_original_through_every_patch_on_it(install, two):
    rec, other = two
    path, base = base_of(install)
    only_blocks = house.compose(other, install, path, base, None)
    assert apply.read_file_header(only_blocks).names == ("prompt-blocks",)
    both = house.compose(rec, install, path, base, only_blocks)
    header = apply.read_file_header(both)
    assert header.names == ("directive-dedupe", "prompt-blocks") and header.original_sha256 == apply.sha256(base)
    assert both.count(b"// senpi-guard: patched by") == 1
    assert house.compose(other, install, path, base, both) == both  # (the same file, whichever patch composes)
    without = house.compose(rec, install, path, base, both, without=("prompt-blocks",))
    assert apply.read_file_header(without).names == ("directive-dedupe",)
    assert house.compose(rec, install, path, base, both, without=("directive-dedupe",)) == only_blocks


def test_another_patch_on_the_file_keeps_the_settings_its_header_records(install, store):
    shared = House([dedupe(), extra_patch("prompt-blocks")])
    mine = Config().with_patch("directive-dedupe", tags=["ultrawork-mode"])
    rec = Reconciler(shared.by_name["directive-dedupe"], mine, store, house=shared)
    other = Reconciler(shared.by_name["prompt-blocks"], Config(), store, house=shared)
    path, base = base_of(install)
    current = house.compose(rec, install, path, base, None)
    recorded = apply.read_file_header(current).entry("directive-dedupe")
    both = house.compose(other, install, path, base, current)
    assert apply.read_file_header(both).entry("directive-dedupe") == recorded  # (not re-set to the defaults)
    read_back = house.recorded_config(other, recorded, current, path)
    assert rec.patch.settings(read_back)["tags"] == rec.patch.settings(mine)["tags"]
    assert rec.patch.settings(read_back) != rec.patch.settings(Config())


def test_another_version_of_a_patch_on_the_file_is_refused(install, two):
    rec, other = two
    path, base = base_of(install)
    older = reheader(house.compose(rec, install, path, base, None), "directive-dedupe", version=rec.patch.version - 1)
    without = house.compose(other, install, path, base, older, without=("directive-dedupe",))
    assert apply.read_file_header(without).names == ("prompt-blocks",)  # (one taken off may be any version)
    with pytest.raises(FatalError) as refused:
        house.compose(other, install, path, base, older)
    assert str(refused.value) == (
        f"{path}: directive-dedupe v{rec.patch.version - 1} is on this file and this senpi-guard has "
        f"v{rec.patch.version}; prompt-blocks leaves the file as it is: run `senpi-guard apply` "
        "(its own run upgrades directive-dedupe)"
    )


@pytest.mark.parametrize("slot", ["as-written", "not-a-setting", "none"])
def test_settings_that_cannot_be_read_back_are_refused(install, two, slot):
    rec, other = two
    path, base = base_of(install)
    composed = house.compose(rec, install, path, base, None)
    # (its header's settings digest is no config's; its region holds its settings, bad ones, or none)
    unknown = reheader(composed, "directive-dedupe", config_sha256="0" * 16)
    if slot == "not-a-setting":
        unknown = re.sub(rb'(/\*senpi-guard:config\*/\{)"tags":\[[^\]]*\]', rb'\1"tags":5', unknown, count=1)
        assert b'{"tags":5,' in unknown
    elif slot == "none":
        unknown = unknown.replace(b"/*senpi-guard:config-end*/", b"", 1)
    with pytest.raises(FatalError) as refused:
        house.compose(other, install, path, base, unknown)
    assert str(refused.value) == (
        f"{path}: directive-dedupe v{rec.patch.version} is on this file with settings this senpi-guard cannot "
        "read back; prompt-blocks leaves the file as it is: run `senpi-guard apply` (its own run re-sets "
        "directive-dedupe)"
    )


def test_a_file_carrying_a_patch_that_is_not_loaded_is_refused(install, two):
    rec, _ = two
    path, base = base_of(install)
    composed = house.compose(rec, install, path, base, None)
    header = apply.read_file_header(composed)
    stranger = header.entries[0]._replace(name="not-loaded")
    with_stranger = header._replace(entries=(*header.entries, stranger))
    house.unknown_on(rec, None, path)
    house.unknown_on(rec, header, path)  # (every patch it names is loaded)
    with pytest.raises(FatalError) as refused:
        house.unknown_on(rec, with_stranger, path)
    assert str(refused.value).startswith(
        f"{path} is patched by not-loaded, which this senpi-guard does not have loaded; nothing was changed"
    )
    with pytest.raises(FatalError, match="is patched by not-loaded"):
        house.recorded_config(rec, stranger, composed, path)
    path.write_bytes(composed.replace(header.line().encode(), with_stranger.line().encode(), 1))
    insp = rec.inspect(install)
    assert insp.state == State.ERROR and "is patched by not-loaded" in insp.detail
    assert rec.inspect(install, unknown_ok=True).state != State.ERROR  # (plain revert needs no patch's code)


def test_the_other_patches_on_a_composed_file_are_proven_before_it_is_written(install, two):
    rec, other = two
    path, base = base_of(install)
    assert house.prove_others(rec, install, [(path, house.compose(rec, install, path, base, None))]) == []
    both = house.compose(rec, install, path, base, house.compose(other, install, path, base, None))
    assert house.prove_others(rec, install, [(path, both)]) == ["prompt-blocks"]  # (a replay of prompt-blocks)
    assert path.read_bytes() == base  # (proven on the bytes about to be written, never written)


def test_another_patch_that_cannot_be_proven_on_this_install_is_refused(install, store):
    stream = extra_patch("prompt-stream")  # (its target, buildPromptStream, is not in the sample)
    shared = House([dedupe(), stream])
    rec = Reconciler(shared.by_name["directive-dedupe"], Config(), store, house=shared)
    path, base = base_of(install)
    composed = house.compose(rec, install, path, base, None)
    header = apply.read_file_header(composed)
    entry = apply.Header(
        "prompt-stream", stream.version, "bridge", header.original_sha256, stream.config_digest(Config())
    )
    claims = composed.replace(header.line().encode(), header._replace(entries=(*header.entries, entry)).line().encode())
    with pytest.raises(FatalError) as refused:
        house.prove_others(rec, install, [(path, claims)])
    assert str(refused.value).startswith("prompt-stream, which shares a file with directive-dedupe, cannot be proven: ")


def test_a_replay_of_another_patch_that_fails_refuses_the_composed_file(tmp_path, store):
    pkg = tmp_path / "broken"
    # (a release whose bridge imports a module it does not ship: no replay of it can import it)
    sample.write_sample_package(
        pkg, 3, fillers=3, bridge_source=sample.prompt_bridge_source(3) + '\nimport "./gone.js";'
    )
    install = Install(pkg, sample.SHAPE_VERSIONS[3], "npm")
    shared = House([dedupe(), extra_patch("prompt-blocks")])
    rec, other = (Reconciler(p, Config(), store, house=shared) for p in shared.patches)
    path, base = base_of(install)
    both = house.compose(rec, install, path, base, house.compose(other, install, path, base, None))
    with pytest.raises(FatalError) as refused:
        house.prove_others(rec, install, [(path, both)])
    said = str(refused.value)
    assert said.startswith("verification of prompt-blocks on the file it shares with directive-dedupe failed, nothing")
    assert re.search(r"\(\d+ failed of \d+ checks\)$", said) and path.read_bytes() == base
