"""The backup that fits a target file of the dist layer (apply rebuilds from it, revert restores it)."""

from __future__ import annotations

from collections.abc import Mapping

from senpi_guard.core.patch import apply, reverse
from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io.store import Backup, Store
from senpi_guard.layers.findings import TargetFile


def fitting_backup(
    store: Store, patch: Patch, house: Mapping[str, Patch], install: Install, tf: TargetFile
) -> Backup | None:
    """The backup of this file, only if it fits: what it reduces to (through `patch` and the other
    patches of the `house`, by name) hashes to the original our header names, and (when the edit
    can be removed) equals what removing it gives."""
    header = tf.classified.header
    backup = store.find_backup(install.package_dir, install.version, tf.rel, header.original_sha256)
    if backup is None:
        return None
    base = reverse.recover(backup.data, patch, house).base
    if (
        base is None
        or apply.sha256(base) != header.original_sha256
        or (tf.classified.base is not None and tf.classified.base != base)
    ):
        raise FatalError(
            f"the backup {backup.path} does not fit {tf.rel} (it is not the original "
            "the patch was made from); nothing was changed: delete that backup, or "
            "revert with --from-edit"
        )
    return backup
