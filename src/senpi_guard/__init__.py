"""senpi-guard: dedupe repeated directive blocks in senpi's Claude prompt, and keep it that way."""

__version__ = "0.1.0"

# How to install senpi-guard, said in one place (the exported package's fix, the docs' words follow
# it). No release is on a package index: a bare name there is one anyone could register, so the
# advice is a clone of the repository and its README's install line. Set REPOSITORY_URL once the
# repository has a public address, and the advice names it.
REPOSITORY_URL = ""
INSTALL_ADVICE = (
    f"install senpi-guard from a clone of senpi-guard's repository{f' ({REPOSITORY_URL})' if REPOSITORY_URL else ''} "
    "(`bash scripts/install.sh` in the clone, as the top of its README says)"
)
