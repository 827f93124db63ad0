"""Prompt bytes per call, before vs after, as an image (needs the optional matplotlib)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from senpi_guard.errors import FatalError


def check(out: Path) -> None:
    """Refuse a bad --plot before any auditing starts."""
    if out.suffix.lower() not in (".png", ".svg"):
        raise FatalError(f"--plot {out}: use a .png or .svg file name")
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise FatalError("--plot needs matplotlib: `pipx inject senpi-guard matplotlib` (pipx), "
                         "`uv tool install '.[plot]'` from a checkout (uv), or `pip install matplotlib` "
                         "in senpi-guard's environment") from exc


def draw(report: dict[str, Any], out: Path) -> None:
    check(out)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"  # (an SVG's words stay text: searchable, readable aloud)
    layers = report.get("series_by_layers") or {"installed": report["series"][0], "dist": report["series"][1]}
    x = list(range(len(layers["installed"])))
    before = [n / 1024 for n in layers["installed"]]
    after = [n / 1024 for n in layers.get("both", layers["dist"])]  # what apply installs: both layers
    summary = report["summary"]
    fig, ax = plt.subplots(figsize=(10, 6), dpi=120)
    less = [a < b for a, b in zip(after, before, strict=True)]
    more = [a > b for a, b in zip(after, before, strict=True)]
    if any(less):
        ax.fill_between(x, after, before, where=less, interpolate=True, color="#f4a259", alpha=0.35,
                        label="not sent with senpi-guard (repeated directive copies)")
    if any(more):
        ax.fill_between(x, before, after, where=more, interpolate=True,
                        color="#6c8ebf", alpha=0.35,
                        label="sent more with senpi-guard (directives senpi as installed dropped)")
    ax.plot(x, before, color="#bc4b51", linewidth=2, label="senpi as installed")
    ax.plot(x, after, color="#2a9d8f", linewidth=2,
            label="with senpi-guard (both layers)" if "both" in layers else "with senpi-guard")
    if "both" in layers:
        ax.plot(x, [n / 1024 for n in layers["dist"]], color="#2a9d8f", linewidth=1, linestyle="--",
                label="dist layer only")
    window = summary.get("context_window_tokens")
    if window:
        ax.axhline(window * 4 / 1024, color="#555", linestyle="--", linewidth=1,
                   label=f"context window ≈ {window:,} tokens (bytes/4)")
    over = summary.get("first_turn_over_window_unpatched")
    if over is not None:
        ax.axvline(over, color="#bc4b51", linestyle=":", linewidth=1,
                   label=f"call {over}: over the window as installed")
    ax.set_xlabel("assistant call (delta calls send only new messages)")
    ax.set_ylabel("prompt bytes sent (KB)")
    head = summary["headline"]
    mb = abs(head["saved_bytes"]) / (1024 * 1024)
    change = (f"{mb:,.2f} MB saved" if head["saved_bytes"] >= 0 else
              f"{mb:,.2f} MB more (the directives senpi as installed drops)")
    ax.set_title(f"{Path(report['session']).name}: {summary['turns']} calls; over {head['turns']} "
                 f"full re-sends {change}, {abs(head['saved_percent'])}%", fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=9, frameon=False)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
