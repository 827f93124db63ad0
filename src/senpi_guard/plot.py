"""Prompt bytes per turn, before vs after, as an image (needs the optional matplotlib)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from senpi_guard.errors import FatalError


def draw(report: dict[str, Any], out: Path) -> None:
    if out.suffix.lower() not in (".png", ".svg"):
        raise FatalError(f"--plot {out}: use a .png or .svg file name")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise FatalError("--plot needs matplotlib: `pipx inject senpi-guard matplotlib` (pipx), "
                         "`uv tool install '.[plot]'` from a checkout (uv), or `pip install matplotlib` "
                         "in senpi-guard's environment") from exc
    unpatched, patched = report["series"]
    x = list(range(len(unpatched)))
    before = [n / 1024 for n in unpatched]
    after = [n / 1024 for n in patched]
    summary = report["summary"]
    fig, ax = plt.subplots(figsize=(10, 5.5), dpi=120)
    ax.fill_between(x, after, before, color="#f4a259", alpha=0.35, label="re-sent directive copies")
    ax.plot(x, before, color="#bc4b51", linewidth=2, label="without senpi-guard")
    ax.plot(x, after, color="#2a9d8f", linewidth=2, label="with senpi-guard")
    window = summary.get("context_window_tokens")
    if window:
        ax.axhline(window * 4 / 1024, color="#555", linestyle="--", linewidth=1)
        ax.annotate(f"context window ≈ {window:,} tokens (bytes/4)", (x[0] if x else 0, window * 4 / 1024),
                    textcoords="offset points", xytext=(4, 4), fontsize=9, color="#555")
    over = summary.get("first_turn_over_window_unpatched")
    if over is not None:
        ax.axvline(over, color="#bc4b51", linestyle=":", linewidth=1)
        ax.annotate(f"turn {over}: over the window without senpi-guard", (over, 0),
                    textcoords="offset points", xytext=(4, 12), fontsize=9, color="#bc4b51")
    ax.set_xlabel("assistant turn")
    ax.set_ylabel("prompt size re-sent (KB)")
    saved = summary["saved_bytes"] / (1024 * 1024)
    ax.set_title(f"{Path(report['session']).name}: {summary['turns']} turns, "
                 f"{saved:,.1f} MB saved ({summary['saved_percent']}%)", fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
