#!/usr/bin/env bash
# Install senpi-guard from this checkout for the user who runs it, with python3 (>= 3.11, with its
# venv module) and nothing else: no pipx, no uv, no root. A venv of its own in
#   ${XDG_DATA_HOME:-~/.local/share}/senpi-guard-venv
# and a `senpi-guard` link in ${XDG_BIN_HOME:-~/.local/bin}. Run it again after `git pull` to upgrade.
#   bash scripts/install.sh              install or upgrade
#   bash scripts/install.sh --uninstall  remove that venv and link (run `senpi-guard uninstall` first)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${XDG_DATA_HOME:-$HOME/.local/share}/senpi-guard-venv"
bin="${XDG_BIN_HOME:-$HOME/.local/bin}"
link="$bin/senpi-guard"
python=${PYTHON:-python3}
fail() { printf 'senpi-guard install: %s\n' "$*" >&2; exit 1; }

if [ "${1:-}" = "--uninstall" ]; then
    if [ -L "$link" ] && [ "$(readlink "$link")" = "$venv/bin/senpi-guard" ]; then rm "$link"; fi
    if [ -x "$venv/bin/python" ]; then rm -r "$venv"; fi
    echo "removed senpi-guard's venv ($venv) and its link ($link), where they were"
    exit 0
fi
[ $# -eq 0 ] || fail "unknown argument $1 (it takes none, or --uninstall)"

command -v "$python" >/dev/null 2>&1 || fail "python3 is not on PATH: install Python 3.11 or newer"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || fail "$("$python" --version 2>&1) is too old: senpi-guard needs Python 3.11 or newer (set PYTHON=python3.12, say)"
"$python" -c 'import ensurepip, venv' 2>/dev/null \
    || fail "python's venv module is missing: on Debian or Ubuntu, sudo apt install python3-venv"
if [ -e "$link" ] && { [ ! -L "$link" ] || [ "$(readlink "$link")" != "$venv/bin/senpi-guard" ]; }; then
    fail "$link is there and is not this installer's link (pipx's, say): remove it first, or keep that install"
fi

echo "==> a venv of its own: $venv"
"$python" -m venv "$venv"
echo "==> pip: senpi-guard from $(pwd) into it"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade .
mkdir -p "$bin"
ln -sfn "$venv/bin/senpi-guard" "$link"
echo "==> $("$link" --version) at $link"

if ! command -v node >/dev/null 2>&1; then
    echo "note: node is not on PATH: senpi-guard proves each change with the node that runs senpi"
fi
case ":$PATH:" in
    *":$bin:"*) echo "next: senpi-guard status" ;;
    *)
        echo "$bin is not on your PATH; for this shell and the next ones:"
        echo "  export PATH=\"$bin:\$PATH\"; echo 'export PATH=\"$bin:\$PATH\"' >> ~/.profile"
        echo "next: senpi-guard status"
        ;;
esac
