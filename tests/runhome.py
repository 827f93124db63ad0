"""The run's own HOME: one HOME, one set of XDG folders and one npm cache per run (per xdist
worker), made fresh and set in the environment for the whole run, so that every process a test
starts inherits them and none of them is the real user's. The guard on each test (`isolated_dirs`
in conftest) looks at this HOME alone: another senpi-guard the same user runs meanwhile (a `demo`, a
`status`) writes into the real HOME, which the suite neither writes nor looks at."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

# where each XDG folder is under a HOME when its variable is unset (a test that takes the variable
# away writes there: into the run's HOME, which the guard looks at)
XDG_UNDER_HOME = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_DATA_HOME": ".local/share",
    "XDG_STATE_HOME": ".local/state",
    "XDG_CACHE_HOME": ".cache",
}


@pytest.fixture(scope="session", autouse=True)
def run_home(temp_folders_laid_out_like_installs, tmp_path_factory) -> Iterator[Path]:
    """HOME, the XDG folders and npm's cache (`npm_config_cache`) of this run, in its temp folder.
    npm's cache is beside the HOME, not in it: npm writes there on every run (its logs too)."""
    home = tmp_path_factory.mktemp("run-home", numbered=False)
    cache = tmp_path_factory.mktemp("run-npm-cache", numbered=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        for key, rel in XDG_UNDER_HOME.items():
            patch.setenv(key, str(home / rel))
        patch.delenv("NPM_CONFIG_CACHE", raising=False)  # (npm reads either spelling)
        patch.setenv("npm_config_cache", str(cache))
        # the suite reads what commands say, not where their prose wraps: one long line each (the
        # tests of the wrapping set the width they test: test_widths, the audit headline's, ui's)
        patch.setenv("COLUMNS", "1000")
        yield home


def tree(home: Path) -> dict[str, tuple[int, int]]:
    """Every path under `home` with its type and modification time (what a write changes)."""
    seen = {}
    for path in home.rglob("*"):
        try:
            st = path.lstat()
        except OSError:
            continue  # (gone meanwhile)
        seen[str(path.relative_to(home))] = (st.st_mode, st.st_mtime_ns)
    return seen


def what_changed(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """The paths a test added, changed or removed, each with what happened to it."""
    changes = [f"+ {p}" for p in sorted(after.keys() - before.keys())]
    changes += [f"- {p}" for p in sorted(before.keys() - after.keys())]
    changes += [f"~ {p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return changes
