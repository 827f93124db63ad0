"""The front door: `senpi-guard` and `python -m senpi_guard`. A `status`, or an `apply` with nothing
to change, whose inputs are all as a remembered run found them prints that run's answer without
loading the rest of senpi-guard (io/answers); every other run goes to the command line (cli)."""

import sys

from senpi_guard.io import answers


def _cli(argv: list[str]) -> int:
    from senpi_guard.cli import main as cli_main

    return cli_main(argv)


def main() -> int:
    return answers.front_door(sys.argv[1:], _cli)


if __name__ == "__main__":
    raise SystemExit(main())
