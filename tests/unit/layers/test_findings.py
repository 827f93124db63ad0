"""layers/findings.py directly: one install's state under one patch, from its files' states."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from senpi_guard.core.patch.classify import State
from senpi_guard.discover import Install
from senpi_guard.layers.findings import overall_detail, overall_state, reinstall


def files(*states: State) -> list:
    return [
        SimpleNamespace(classified=SimpleNamespace(state=s, detail=""), path=SimpleNamespace(name=f"f{i}.js"))
        for i, s in enumerate(states)
    ]


@pytest.mark.parametrize(
    ("states", "deferred", "expected"),
    [
        ((State.PATCHED, State.PATCHED), False, State.PATCHED),
        ((State.UNPATCHED, State.UNPATCHED), False, State.UNPATCHED),
        ((State.UNPATCHED, State.UNPATCHED), True, State.UPSTREAM),
        ((State.PATCHED, State.UNPATCHED), False, State.PARTIAL),
        ((State.PATCHED, State.STALE), False, State.STALE),
        ((State.STALE, State.DRIFTED), False, State.DRIFTED),
        ((State.HAND_PATCHED, State.PATCHED), False, State.HAND_PATCHED),
        ((State.CLEAN,), False, State.CLEAN),
        ((State.CLEAN, State.PATCHED), False, State.PATCHED),
        ((), False, State.CLEAN),
    ],
)
def test_overall_state(states, deferred, expected):
    assert overall_state(files(*states), deferred) == expected


def test_the_detail_says_what_apply_will_do():
    assert "completes it" in overall_detail(files(State.PATCHED, State.UNPATCHED), False, "")
    assert 'x = "y"' in overall_detail(files(State.PATCHED), True, 'x = "y"')
    assert overall_detail(files(State.PATCHED), False, "") == ""


@pytest.mark.parametrize(
    ("package_dir", "manager", "command"),
    [
        ("/opt/tools/lib/node_modules/@code-yeongyu/senpi", "npm", "npm install -g --prefix /opt/tools {spec}"),
        (
            "/home/me/.nvm/versions/node/v22.1.0/lib/node_modules/@code-yeongyu/senpi",
            "npm (nvm)",
            "npm install -g --prefix /home/me/.nvm/versions/node/v22.1.0 {spec}",
        ),
        ("/home/me/proj/node_modules/@code-yeongyu/senpi", "npm", "npm install -g {spec}"),  # (not a global prefix)
        (
            "/home/me/.volta/tools/image/packages/@code-yeongyu/senpi/lib/node_modules/@code-yeongyu/senpi",
            "npm (volta)",
            "volta install {spec}",
        ),
        ("/home/me/.local/share/pnpm/global/v11/x-0/node_modules/@code-yeongyu/senpi", "pnpm", "pnpm add -g {spec}"),
        ("/home/me/.config/yarn/global/node_modules/@code-yeongyu/senpi", "yarn", "yarn global add {spec}"),
        ("/home/me/.bun/install/global/node_modules/@code-yeongyu/senpi", "bun", "bun add -g {spec}"),
        ("/somewhere/senpi", "npm", "npm install -g {spec}"),
    ],
)
def test_the_reinstall_step_puts_the_release_back_where_the_install_is(package_dir, manager, command):
    """Not `npm install -g` whatever the install: that goes to npm's own prefix, which may be another."""
    install = Install(Path(package_dir), "2026.8.9", manager)
    assert reinstall(install) == command.format(spec="@code-yeongyu/senpi@2026.8.9")
