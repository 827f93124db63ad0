"""Prompt bytes per call and cumulative dollars (or tokens), per layer, as an image (needs the optional
matplotlib)."""

from __future__ import annotations

import io
import itertools
import os
from pathlib import Path
from typing import Any

from senpi_guard import ui
from senpi_guard.errors import FatalError
from senpi_guard.io import write


def check(out: Path) -> None:
    """Refuse a bad --plot before any auditing starts."""
    if out.suffix.lower() not in (".png", ".svg"):
        raise FatalError(f"--plot {out}: use a .png or .svg file name")
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise FatalError(
            "--plot needs matplotlib: `pipx inject senpi-guard matplotlib` (pipx), "
            "`uv tool install '.[plot]'` from a checkout (uv), or `pip install matplotlib` "
            "in senpi-guard's environment"
        ) from exc


COLORS = {"installed": "#bc4b51", "dist": "#2a9d8f", "extension": "#8e6c8a", "both": "#264653"}
NAMES = {
    "installed": "senpi as installed",
    "dist": "dist layer only",
    "extension": "extension layer only",
    "both": "with senpi-guard (both layers)",
}


def _layers_to_draw(layers: dict[str, Any]) -> list[tuple[str, str]]:
    """Every layer as (config, legend label); one that repeats a series already drawn says which
    (its line lies under that one)."""
    drawn: list[tuple[str, str]] = []
    for config in ("installed", "both", "dist", "extension"):
        if config not in layers:
            continue
        same = next((NAMES[d] for d, _ in drawn if list(layers[d]) == list(layers[config])), None)
        label = NAMES[config] if "both" in layers or config == "installed" else "with senpi-guard"
        drawn.append((config, label + (f" (same as {same})" if same else "")))
    return drawn


def _line(ax, x: Any, values: list[float], config: str, label: str) -> None:
    main = config in ("installed", "both")
    ax.plot(
        x,
        values,
        color=COLORS[config],
        linewidth=2 if main else 1.2,
        linestyle="-" if main else "--",
        label=label,
        zorder=2 if main else 3,
    )  # (a dashed layer stays visible over the one it equals)


def _bytes_panel(ax, layers: dict[str, Any], summary: dict[str, Any]) -> None:
    x = list(range(len(layers["installed"])))
    before = [n / 1000 for n in layers["installed"]]
    after = [n / 1000 for n in layers.get("both", layers["dist"])]
    less = [a < b for a, b in zip(after, before, strict=True)]
    more = [a > b for a, b in zip(after, before, strict=True)]
    if any(less):
        ax.fill_between(
            x,
            after,
            before,
            where=less,
            interpolate=True,
            color="#f4a259",
            alpha=0.35,
            label="not sent with senpi-guard (repeated directive copies)",
        )
    if any(more):
        ax.fill_between(
            x,
            before,
            after,
            where=more,
            interpolate=True,
            color="#6c8ebf",
            alpha=0.35,
            label="sent more with senpi-guard (directives senpi as installed dropped)",
        )
    for config, label in _layers_to_draw(layers):
        _line(ax, x, [n / 1000 for n in layers[config]], config, label)
    window = summary.get("context_window_tokens")
    if window:
        ax.axhline(
            window * 4 / 1000,
            color="#555",
            linestyle="--",
            linewidth=1,
            label=f"context window ≈ {window:,} tokens (bytes/4)",
        )
    over = summary.get("first_turn_over_window_unpatched")
    if over is not None:
        ax.axvline(
            over, color="#bc4b51", linestyle=":", linewidth=1, label=f"call {over}: over the window as installed"
        )
    ax.set_ylabel("prompt bytes sent (kB)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", ncol=2, fontsize=8, frameon=False)


def _money_panel(ax, series: dict[str, Any], money: dict[str, Any]) -> None:
    """Cumulative dollars at list price per layer, or tokens where there is no price to pay."""
    dollars = money.get("usd") is not None and money.get("usd_calls") == money.get("calls")
    values = series["usd" if dollars else "tokens"]
    for config, label in _layers_to_draw(values):
        points = list(itertools.accumulate(values[config]))
        _line(ax, range(len(points)), points, config, label)
    ax.set_ylabel("≈ $ at API list price, cumulative" if dollars else "tokens, cumulative")
    what = (
        "recorded usage where senpi recorded it, else bytes/4; layers priced where their bytes sit"
        if dollars
        else "tokens counted against a plan's limits (no list price paid, or no price known)"
    )
    ax.set_title(what, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=8, frameon=False)


def draw(report: dict[str, Any], out: Path) -> None:
    check(out)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"  # (an SVG's words stay text: searchable, readable aloud)
    layers = report.get("series_by_layers") or {"installed": report["series"][0], "dist": report["series"][1]}
    summary = report["summary"]
    money = summary.get("money") or {}
    series = report.get("money_series")
    with_money = bool(series and money.get("calls"))
    fig, axes = plt.subplots(
        2 if with_money else 1, 1, figsize=(10, 9 if with_money else 6), dpi=120, sharex=True, squeeze=False
    )
    _bytes_panel(axes[0][0], layers, summary)
    if with_money:
        _money_panel(axes[1][0], series, money)
    axes[-1][0].set_xlabel("assistant call (delta calls send only new messages)")
    head = summary["headline"]
    amount = ui.size(abs(head["saved_bytes"]))
    change = (
        f"{amount} saved" if head["saved_bytes"] >= 0 else f"{amount} more (the directives senpi as installed drops)"
    )
    axes[0][0].set_title(
        f"{Path(report['session']).name}: {summary['turns']} calls; over {head['turns']} "
        f"full re-sends {change}, {abs(head['saved_percent'])}%",
        fontsize=11,
    )
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format=out.suffix.lower()[1:])
    plt.close(fig)
    # (relative to the folder opened, no link followed: root may be writing where a user can write)
    write.place(Path(os.path.abspath(out.parent)), out.name, image.getvalue(), None, over_any=True)
