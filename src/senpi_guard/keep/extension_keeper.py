"""The watcher's hand on the extension layer: installed in each agent dir the installs use when it
is wanted and absent or stale (verified first, as by apply). An edited or foreign file, an agent dir
where it would be unsafe, an install whose agent dir cannot be told: each is logged once and left
alone. A failed replay is not tried again for the same patch, config and agent dir."""

from __future__ import annotations

import threading

from senpi_guard import discover
from senpi_guard.core.patch import reshape
from senpi_guard.core.patch.definition import Patch
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.keep.notify import log
from senpi_guard.layers import extension, extension_plan
from senpi_guard.layers.dist import Reconciler


class ExtensionKeeper:
    def __init__(self, store: Store, stop: threading.Event) -> None:
        self.store = store
        self.stop = stop
        self.notes: set[tuple[str, str]] = set()  # standing problems already logged
        self.failed: set[tuple[str, str]] = set()  # (patch id, agent dir) whose replay failed

    def keep(self, patch: Patch, config: Config, installs: list[discover.Install]) -> None:
        if "extension" not in config.layers or patch.extension is None or not installs:
            return
        reconciler = Reconciler(patch, config, self.store, quick_locate=True)
        planned, errors = extension_plan.targets(
            patch, installs, config, self.store, lambda inst: reconciler.inspect(inst).present
        )
        for _install, line in errors:
            self._note(("error", line), "extension layer: %s", line)
        for target in planned:
            if self.stop.is_set():
                return
            self._keep_in(patch, config, target)

    def _note(self, key: tuple[str, str], message: str, *args: object) -> None:
        """Log a standing problem once, not on every rescan."""
        if key not in self.notes:
            self.notes.add(key)
            log.warning(message, *args)

    def _keep_in(self, patch: Patch, config: Config, target: extension_plan.AgentTarget) -> None:
        if self.store.hold(target.agent_dir) is not None:  # reverted by hand
            self._note(
                ("held", str(target.agent_dir)),
                "extension layer %s: held by `senpi-guard revert`; left alone until `senpi-guard apply`",
                target.agent_dir,
            )
            return
        if target.unsafe:
            self._note(("unsafe", str(target.agent_dir)), "extension layer %s: %s", target.agent_dir, target.unsafe)
            return
        try:
            status = extension.inspect(patch, config, target.agent_dir)
            if status.state in ("modified", "foreign"):
                self._note(
                    (status.state, str(status.path)),
                    "extension layer %s: %s (%s); run `senpi-guard apply`",
                    status.path,
                    status.state,
                    status.detail,
                )
                return
            if status.state == "stale" and status.reshapes:
                self._note(
                    ("reshapes", f"{status.path} {status.reshapes}"),
                    "extension layer %s: left as it is: %s; run `senpi-guard apply` to make that change",
                    status.path,
                    reshape.cost("extension", status.reshapes),
                )
                return
            wanted = (patch.patch_id(config), str(target.agent_dir))
            if status.state == "installed" or wanted in self.failed:
                return
            with self.store.lock():
                outcome = extension.install(
                    patch, config, target.installs, self.store, target.agent_dir, cancel=self.stop
                )
        except FatalError as exc:
            log.error("extension layer %s: %s", target.agent_dir, exc)
            return
        if outcome.ok:
            log.info("extension layer %s: %s -> %s (%s)", outcome.path, outcome.before, outcome.after, outcome.detail)
        else:
            self.failed.add(wanted)
            log.error("extension layer %s: %s", outcome.path, outcome.detail)
