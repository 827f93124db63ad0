"""The front door: `senpi-guard` and `python -m senpi_guard` go to the command line (cli)."""

import sys


def main() -> int:
    from senpi_guard.cli import main as cli_main

    return cli_main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
