"""Measure: which of senpi-guard's own modules one install's `status` and `apply` pass through (a
module counts when a function of it runs, not when it is only imported), on a sample package of the
newest compiled shape, in a throw-away HOME. Prints the count per command and, with -v, the modules.

    .venv/bin/python bench/walk.py [-v] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

PACKAGE = "senpi_guard"


def walked(argv: list[str]) -> tuple[int, set[str]]:
    """The exit code of `senpi-guard ARGV` run in this process, and the modules whose code ran."""
    from senpi_guard import cli

    seen: set[str] = set()

    def profile(frame, event, _arg) -> None:
        if event == "call" and frame.f_code.co_name != "<module>":  # (an import is not a visit)
            name = frame.f_globals.get("__name__", "")
            if name.startswith(PACKAGE):
                seen.add(name)

    sys.setprofile(profile)
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.setprofile(None)
    return code, seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", action="store_true", help="name the modules")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ.update({"HOME": home, "XDG_CONFIG_HOME": f"{home}/.config", "XDG_DATA_HOME": f"{home}/.local/share"})
        os.environ.update({"XDG_STATE_HOME": f"{home}/.local/state", "XDG_CACHE_HOME": f"{home}/.cache"})
        os.environ["SENPI_GUARD_CONFIG"] = f"{home}/config.toml"
        Path(home, "config.toml").write_text("")
        from senpi_guard.demo import sample

        pkg = Path(home) / "senpi"
        sample.write_sample_package(pkg, 3, fillers=3)
        rows = {}
        for name, argv in (("status", ["status", "--root", str(pkg)]), ("apply", ["apply", "--root", str(pkg)])):
            saved = sys.stdout
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (the command's own output is not the measure)
            try:
                code, seen = walked(argv)
            finally:
                sys.stdout.close()
                sys.stdout = saved
            rows[name] = {"exit": code, "modules": sorted(seen)}
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for name, row in rows.items():
        print(f"{name}: exit {row['exit']}, {len(row['modules'])} modules")
        if args.v:
            print("  " + "\n  ".join(row["modules"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
