"""senpi-guard: dedupe repeated directive blocks in senpi's Claude prompt, and keep it that way."""

__version__ = "0.1.0"
