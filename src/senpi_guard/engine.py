"""inspect / reconcile / revert one install. apply, verify, watch and demo all come through here."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from senpi_guard import edit, fsio, jslocate, locate, state, verify
from senpi_guard.config import Config
from senpi_guard.errors import FatalError
from senpi_guard.install import Install
from senpi_guard.patchset import Patch, Target

UPSTREAM, UNSUPPORTED, ERROR, PARTIAL = "upstream", "unsupported", "error", "partial"


@dataclass
class TargetFile:
    target: Target
    snapshot: fsio.Snapshot
    rel: str
    classified: state.Classified

    @property
    def path(self) -> Path:
        return self.snapshot.path


@dataclass
class Inspection:
    install: Install
    state: str
    files: list[TargetFile] = field(default_factory=list)
    detail: str = ""

    @property
    def prompt(self) -> TargetFile | None:
        return next((f for f in self.files if f.target.role == "prompt"), None)

    @property
    def upstream_present(self) -> bool:
        return any(f.target.role == "upstream" for f in self.files)


@dataclass
class Outcome:
    install: Install
    before: str
    after: str
    ok: bool
    detail: str = ""
    changed: list[str] = field(default_factory=list)
    report: verify.VerifyReport | None = None
    diff: str = ""
    target: str = ""
    upstream_present: bool = False
    millis: int = 0
    files: list[Path] = field(default_factory=list)

    @classmethod
    def of(cls, insp: Inspection) -> Outcome:
        """An outcome that starts where the inspection found the install."""
        return cls(insp.install, insp.state, insp.state, False, insp.detail,
                   target=str(insp.prompt.path) if insp.prompt else "",
                   upstream_present=insp.upstream_present, files=[f.path for f in insp.files])


def render(patch: Patch, config: Config, target: Target, base: bytes, path: Path) -> bytes:
    try:
        tree = jslocate.parse(base)
    except jslocate.JsSyntaxError as exc:
        raise FatalError(f"{path}: the unpatched code has a {exc}; reinstall senpi") from exc
    defs = jslocate.find_definitions(tree, target.function)
    if len(defs) != 1:
        raise FatalError(f"{path}: expected one definition of {target.function}, found "
                         f"{len(defs)}; reinstall senpi")
    locate.describe_returns(path, defs[0], "{param0}" in target.wrap)
    header = edit.Header(patch.name, patch.version, target.role, edit.sha256(base),
                         patch.config_digest(config))
    return edit.apply_edit(base, defs[0].returns, target.wrap, defs[0].params,
                           patch.render_payload(config), header)


def inspect(install: Install, patch: Patch, config: Config) -> Inspection:
    if install.unsupported:
        return Inspection(install, UNSUPPORTED, detail=install.unsupported)
    try:
        return _inspect(install, patch, config)
    except FatalError as exc:
        return Inspection(install, ERROR, detail=str(exc))


def _inspect(install: Install, patch: Patch, config: Config) -> Inspection:
    dist = install.package_dir / "dist"
    files = locate.js_files(dist)
    found: list[TargetFile] = []
    for target in patch.targets:
        hits = locate.find_exported_function(dist, target.function, files)
        if len(hits) > 1:
            where = ", ".join(f"{h.path.relative_to(dist)}:{h.definition.line}" for h in hits)
            raise FatalError(f"senpi {install.version} at {install.package_dir}: {len(hits)} "
                             f"definitions of {target.function} ({where}); senpi-guard will "
                             "not guess: report this version")
        if not hits:
            if target.required:
                raise FatalError(f"senpi {install.version} at {install.package_dir}: no file "
                                 f"under dist/ defines and exports {target.function} (searched "
                                 f"{len(files)} .js files); this version is not supported yet")
            continue
        snapshot = fsio.read(hits[0].path, install.package_dir)
        classified = state.classify(
            snapshot.data, patch, config,
            lambda base, t=target, p=snapshot.path: render(patch, config, t, base, p))
        found.append(TargetFile(target, snapshot, str(hits[0].path.relative_to(install.package_dir)),
                                classified))
    return Inspection(install, _overall(found, config), found, _detail(found, config))


def _overall(files: list[TargetFile], config: Config) -> str:
    states = {f.classified.state for f in files}
    upstream = any(f.target.role == "upstream" for f in files)
    if upstream and config.upstream_dedupe == "defer" and states == {state.UNPATCHED}:
        return UPSTREAM
    for worst in (state.DRIFTED, state.HAND_PATCHED, state.STALE):
        if worst in states:
            return worst
    if states == {state.PATCHED}:
        return state.PATCHED
    if states == {state.UNPATCHED}:
        return state.UNPATCHED
    return PARTIAL


def _detail(files: list[TargetFile], config: Config) -> str:
    notes = [f"{f.path.name}: {f.classified.detail}" for f in files if f.classified.detail]
    if any(f.target.role == "upstream" for f in files) and config.upstream_dedupe == "defer" \
            and any(f.classified.state != state.UNPATCHED for f in files):
        notes.append("config says upstream_dedupe = \"defer\": apply removes the patch")
    if {f.classified.state for f in files} == {state.PATCHED, state.UNPATCHED}:
        notes.append("only some target files are patched: apply completes it")
    return "; ".join(notes)


def base_of(install: Install, patch: Patch, config: Config, tf: TargetFile) -> bytes:
    c = tf.classified
    if c.base is not None:
        return c.base
    if c.state == state.DRIFTED and c.header is not None:
        backup = state.find_backup(install.package_dir, install.version, tf.rel,
                                   c.header.original_sha256)
        if backup is not None:
            again = state.classify(backup.data, patch, config, lambda b: b"")
            if again.base is not None:
                return again.base
    label = f"senpi {install.version} at {install.package_dir}: {tf.path}"
    if c.state == state.HAND_PATCHED:
        raise FatalError(f"{label} carries a hand-applied {patch.hand_fix_function} that "
                         f"senpi-guard cannot remove cleanly ({c.detail}); reinstall senpi "
                         f"(npm install -g {install_spec(install)}) and run apply again")
    raise FatalError(f"{label} was changed after senpi-guard patched it ({c.detail}); reinstall "
                     f"senpi (npm install -g {install_spec(install)}) and run apply again")


def install_spec(install: Install) -> str:
    return f"@code-yeongyu/senpi@{install.version}"


def _patch_id(patch: Patch, config: Config) -> str:
    return f"{patch.name} v{patch.version} {patch.config_digest(config)}"


def _verified_before(install: Install, patch: Patch, config: Config, shas: dict[str, str]) -> bool:
    last = state.install_record(install.package_dir).get("last_verify", {})
    return bool(last.get("ok")) and last.get("shas") == shas and last.get("patch") == _patch_id(patch, config)


def record_verification(install: Install, patch: Patch, config: Config,
                        report: verify.VerifyReport, shas: dict[str, str]) -> None:
    """What `status` shows as the last verification, and what lets `apply` skip a re-run."""
    state.update_install_record(install.package_dir, version=install.version, last_verify={
        "ok": report.ok, "time": time.time(), "checks": report.checks_run, "shas": shas,
        "node": report.node_version, "failures": [str(f) for f in report.failures[:5]],
        "patch": _patch_id(patch, config)})


def module_pairs(insp: Inspection, patch: Patch, config: Config, *,
                 roles: tuple[str, ...] | None = None) -> dict[str, verify.ModulePair]:
    """Each target's unpatched bytes beside what `apply` makes of them. A `patched` file already
    is that (classify checked it byte for byte), so it is not rendered again."""
    pairs = {}
    for tf in insp.files:
        if roles is not None and tf.target.role not in roles:
            continue
        base = base_of(insp.install, patch, config, tf)
        patched = tf.classified.state == state.PATCHED
        candidate = tf.snapshot.data if patched else render(patch, config, tf.target, base, tf.path)
        pairs[tf.target.role] = verify.ModulePair(tf.path, tf.target.function, base, candidate)
    return pairs


def replay(install: Install, patch: Patch, config: Config,
           pairs: dict[str, verify.ModulePair]) -> verify.VerifyReport:
    report = verify.replay(install.package_dir, pairs["prompt"], pairs.get("upstream"),
                           tags=list(config.tags), marker=patch.marker_template,
                           max_marker_bytes=patch.max_marker_bytes, call=patch.call,
                           fixtures=patch.fixtures(), timeout=config.verify_timeout)
    return verify.summarize(report)


def reconcile(install: Install, patch: Patch, config: Config, *, dry_run: bool = False) -> Outcome:
    started = time.monotonic()
    insp = inspect(install, patch, config)
    outcome = Outcome.of(insp)
    try:
        fsio.remove_stale_temps(outcome.files)
        if insp.state in (UNSUPPORTED, ERROR):
            return outcome
        if insp.upstream_present and config.upstream_dedupe == "defer":
            _defer(insp, patch, config, outcome, dry_run)
        else:
            _patch(insp, patch, config, outcome, dry_run)
    except FatalError as exc:
        outcome.ok, outcome.after, outcome.detail = False, outcome.before, str(exc)
    finally:
        outcome.millis = int((time.monotonic() - started) * 1000)
    return outcome


def _patch(insp: Inspection, patch: Patch, config: Config, outcome: Outcome, dry_run: bool) -> None:
    install = insp.install
    pairs = module_pairs(insp, patch, config)
    wanted = {role: pair.candidate for role, pair in pairs.items()}
    to_write = [tf for tf in insp.files if wanted[tf.target.role] != tf.snapshot.data]
    shas = {tf.rel: edit.sha256(wanted[tf.target.role]) for tf in insp.files}
    if not to_write and _verified_before(install, patch, config, shas):
        outcome.ok, outcome.after = True, state.PATCHED
        outcome.detail = "already patched and verified"
        return
    report = replay(install, patch, config, pairs)
    outcome.report = report
    if not dry_run:
        record_verification(install, patch, config, report, shas)
    if not report.ok:
        first = report.failures[0] if report.failures else "no checks ran"
        raise FatalError(f"verification failed, nothing was changed: {first} "
                         f"({len(report.failures)} failed of {report.checks_run} checks)")
    if dry_run:
        from senpi_guard.diffview import window_diff
        outcome.diff = "".join(window_diff(tf.rel, tf.snapshot.data, wanted[tf.target.role])
                               for tf in to_write)
        outcome.ok, outcome.after = True, insp.state
        outcome.detail = "dry run: verified, nothing written"
        return
    for tf in sorted(to_write, key=lambda t: t.target.role != "upstream"):
        base_sha = edit.sha256(pairs[tf.target.role].original)
        if tf.classified.state not in (state.PATCHED, state.STALE, state.DRIFTED):
            state.save_backup(install.package_dir, install.version, tf.rel, tf.snapshot.data,
                              base_sha)
        fsio.replace(tf.snapshot, wanted[tf.target.role])
        outcome.changed.append(tf.rel)
    outcome.ok, outcome.after = True, state.PATCHED
    outcome.detail = f"verified: {report.checks_run} checks passed (node {report.node_version})"


def _defer(insp: Inspection, patch: Patch, config: Config, outcome: Outcome,
           dry_run: bool) -> None:
    ours = [tf for tf in insp.files if tf.classified.header is not None]
    for tf in ours:
        base = base_of(insp.install, patch, config, tf)
        if not dry_run:
            fsio.replace(tf.snapshot, base)
        outcome.changed.append(tf.rel)
    outcome.after = UPSTREAM if not dry_run or not ours else outcome.before
    outcome.ok = outcome.after == UPSTREAM or dry_run
    outcome.detail = ("upstream_dedupe = \"defer\": removed the patch, upstream's dedupe is in "
                      "charge" if ours else "upstream_dedupe = \"defer\": left to upstream's dedupe")


def revert(install: Install, patch: Patch, config: Config, *, from_edit: bool = False) -> Outcome:
    insp = inspect(install, patch, config)
    outcome = Outcome.of(insp)
    if insp.state in (UNSUPPORTED, ERROR):
        return outcome
    ours = [tf for tf in insp.files if tf.classified.header is not None]
    try:
        how = []
        plans = []
        for tf in ours:
            header = tf.classified.header
            backup = None if from_edit else state.find_backup(
                install.package_dir, install.version, tf.rel, header.original_sha256)
            if backup is not None:
                plans.append((tf, backup.data))
                how.append(f"{tf.path.name}: restored from backup {backup.path}")
            elif tf.classified.base is not None:
                plans.append((tf, tf.classified.base))
                how.append(f"{tf.path.name}: removed the edit (sha256 matches the original)"
                           + ("" if from_edit else "; no backup was found"))
            else:
                raise FatalError(f"senpi {install.version} at {install.package_dir}: {tf.path} "
                                 f"cannot be reverted ({tf.classified.detail}) and no backup "
                                 f"exists; reinstall senpi (npm install -g {install_spec(install)})")
        for tf, data in sorted(plans, key=lambda p: p[0].target.role != "prompt"):
            fsio.replace(tf.snapshot, data)
            outcome.changed.append(tf.rel)
    except FatalError as exc:
        outcome.detail = str(exc)
        return outcome
    outcome.ok = True
    outcome.after = inspect(install, patch, config).state
    outcome.detail = "; ".join(how) if how else "not patched by senpi-guard; nothing to revert"
    return outcome
