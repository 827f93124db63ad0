"""`status` and `audit` as Prometheus metrics (`--format prometheus`, `--textfile DIR`), made from the
very rows and reports their `--json` prints. docs/metrics.md lists every metric."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from senpi_guard import ui
from senpi_guard.core.patch.classify import State
from senpi_guard.errors import UsageError
from senpi_guard.io import prometheus
from senpi_guard.io.prometheus import Family

FORMATS = ("text", "json", "prometheus")
COUNTED = ("full", "delta", "context", "summary")  # the lanes audit's every_call and money count
NOT_RECORDED = "not recorded"  # the provider label of a call whose provider senpi did not record
BASE = "installed"  # the configuration each saving is measured from (senpi as installed)


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="text (default), json (as --json) or prometheus (node_exporter's textfile format)",
    )
    parser.add_argument(
        "--textfile",
        type=Path,
        metavar="DIR",
        help="write the metrics atomically to DIR/senpi_guard.prom (node_exporter's textfile collector folder)",
    )


def chosen(args) -> str:
    """The output format (--json is --format json; --textfile means prometheus); a bad mix is a usage
    error, and a --textfile folder that cannot take the file is refused before any work."""
    fmt = args.format or ("json" if args.json else "prometheus" if args.textfile else "text")
    if args.json and fmt != "json":
        raise UsageError(f"--json and --format {fmt} ask for two formats; give one")
    if args.textfile is not None:
        if fmt != "prometheus":
            raise UsageError(f"--textfile writes Prometheus metrics; drop --format {fmt} (or --json)")
        prometheus.check_folder(args.textfile)
    args.json = fmt == "json"
    return fmt


def emit(args, families: list[Family], theirs: frozenset[str]) -> None:
    """Print the metrics, or write them to --textfile DIR (keeping the other command's families)."""
    if args.textfile is None:
        sys.stdout.write(prometheus.render(families))
        return
    target = prometheus.write_textfile(args.textfile, families, theirs)
    if not ui.quiet():
        print(f"metrics written to {target}")


def _names(families: list[Family]) -> frozenset[str]:
    return frozenset(f.name for f in families)


# --- status ---------------------------------------------------------------------------------------


def status_families(rows: list[dict[str, Any]], watcher: dict[str, Any] | None) -> list[Family]:
    """Per install (its `status --json` row): what it is, its state one-hot, each patch's layers."""
    info = Family("senpi_guard_install_info", "A senpi install senpi-guard found (always 1).")
    state = Family(
        "senpi_guard_install_state", "1 for the install's state (over every patch, as status shows it), else 0."
    )
    wanted = Family(
        "senpi_guard_install_as_wanted", "1 when every layer the config wants is in place for the install, else 0."
    )
    layer = Family(
        "senpi_guard_install_layer_patched",
        "1 when the layer is in place for the install (dist: patched; extension: installed), else 0.",
    )
    layer_state = Family(
        "senpi_guard_install_layer_state", "1 for each layer of each patch, its state as status --json names it."
    )
    verified = Family(
        "senpi_guard_install_last_verify_ok",
        "1 when the last verification of the patch passed and was of the target files as they are now, else 0.",
    )
    verified_at = Family(
        "senpi_guard_install_last_verify_timestamp_seconds", "When the patch was last verified (Unix time)."
    )
    running = Family("senpi_guard_watcher_running", "1 when senpi-guard's watcher is running, else 0.")
    stamp = Family("senpi_guard_status_timestamp_seconds", "When `senpi-guard status` wrote these metrics.")
    for row in rows:
        install = row["package_dir"]
        info.add(1, install=install, version=str(row["version"]), manager=str(row["manager"]))
        for each in State:
            state.add(float(row["state"] == each), install=install, state=each.value)
        wanted.add(float(row["as_wanted"]), install=install)
        for sub in row["patches"]:
            labels = {"install": install, "patch": sub["patch"]}
            for name, done in (("dist", State.PATCHED), ("extension", State.INSTALLED)):
                if sub["layers"][name] is not None:  # (a patch without an extension has no such layer)
                    layer.add(float(sub["layers"][name] == done), **labels, layer=name)
                    layer_state.add(1, **labels, layer=name, state=str(sub["layers"][name]))
            last = sub["last_verify"]
            if last and isinstance(last.get("time"), int | float) and not isinstance(last.get("time"), bool):
                verified.add(float(bool(last.get("ok")) and sub["last_verify_of_these_files"]), **labels)
                verified_at.add(float(last["time"]), **labels)
    running.add(float(bool(watcher)))
    stamp.add(time.time())
    return [info, state, wanted, layer, layer_state, verified, verified_at, running, stamp]


# --- audit ----------------------------------------------------------------------------------------


def _provider(name: Any) -> str:
    return name if isinstance(name, str) and name else NOT_RECORDED


class AuditMetrics:
    """A stand-in for audit's JsonStream: it takes the same rows and reports, and sums them per
    provider over every session audited; `close` prints or writes the metrics."""

    def __init__(self, args) -> None:
        self.args = args
        self.sessions = {"audited": 0, "failed": 0}
        self.warnings = 0
        self.calls: dict[str, int] = {}
        self.bytes: dict[str, dict[str, int]] = {}
        self.tokens: dict[str, dict[str, float]] = {}
        self.saved_tokens: dict[str, dict[str, float]] = {}
        self.usd: dict[str, dict[str, float]] = {}
        self.saved_usd: dict[str, dict[str, float]] = {}

    def start(self, path: Path, server) -> None:
        pass

    def row(self, row: dict[str, Any]) -> None:
        if row["sent"] not in COUNTED:  # (a call of an unknown lane: audit's totals leave it out too)
            return
        provider = _provider(row["provider"])
        self.calls[provider] = self.calls.get(provider, 0) + 1
        sizes = self.bytes.setdefault(provider, {})
        for config, n in row["bytes"].items():
            sizes[config] = sizes.get(config, 0) + n

    def end(self, report: dict[str, Any]) -> None:
        self.sessions["audited"] += 1
        self.warnings += sum(report["warnings"].values())
        for group in report["summary"]["money"]["by_model"]:
            provider = _provider(group["provider"])
            _add(self.tokens, provider, {c: t["total"] for c, t in group["tokens"].items()})
            _add(self.saved_tokens, provider, {c: t["total"] for c, t in group["saved_tokens"].items()})
            if group["usd"] is not None:
                _add(self.usd, provider, group["usd"])
                _add(self.saved_usd, provider, group["saved_usd"])

    def fail(self, path: Path, error: str) -> None:
        self.sessions["failed"] += 1

    def close(self, error: str | None = None) -> None:
        if error is None:  # (a run that stops writes nothing: the last complete file stays)
            emit(self.args, self.families(), STATUS_NAMES)

    def families(self) -> list[Family]:
        sessions = Family("senpi_guard_audit_sessions", "Sessions in this audit, by outcome (audited or failed).")
        for outcome, n in self.sessions.items():
            sessions.add(n, outcome=outcome)
        calls = Family(
            "senpi_guard_audit_calls", "Provider calls counted over the sessions audited (unknown lanes left out)."
        )
        for provider, n in sorted(self.calls.items()):
            calls.add(n, provider=provider)
        stamp = Family("senpi_guard_audit_timestamp_seconds", "When `senpi-guard audit` wrote these metrics.")
        stamp.add(time.time())
        warnings = Family(
            "senpi_guard_audit_warnings",
            "Lines and entries the audit skipped or could not use, over the sessions audited (named on stderr).",
        )
        warnings.add(self.warnings)
        return [
            sessions,
            warnings,
            calls,
            _by_config("senpi_guard_audit_prompt_bytes", "Prompt bytes the calls send, per configuration.", self.bytes),
            _by_config(
                "senpi_guard_audit_saved_prompt_bytes",
                "Prompt bytes a configuration sends fewer than senpi as installed.",
                {p: {c: b[BASE] - n for c, n in b.items() if c != BASE} for p, b in self.bytes.items()},
            ),
            _by_config("senpi_guard_audit_tokens", "Tokens of the calls, per configuration.", self.tokens),
            _by_config(
                "senpi_guard_audit_saved_tokens",
                "Tokens a configuration spends fewer than senpi as installed.",
                _but_base(self.saved_tokens),
            ),
            _by_config(
                "senpi_guard_audit_cost_usd",
                "US dollars the calls cost at API list price, per configuration (providers that pay it).",
                self.usd,
            ),
            _by_config(
                "senpi_guard_audit_saved_usd",
                "US dollars at API list price a configuration costs less than senpi as installed.",
                _but_base(self.saved_usd),
            ),
            stamp,
        ]


def _add(total: dict[str, dict[str, float]], provider: str, values: dict[str, float]) -> None:
    mine = total.setdefault(provider, {})
    for config, value in values.items():
        mine[config] = mine.get(config, 0.0) + value


def _but_base(values: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    return {provider: {c: v for c, v in per.items() if c != BASE} for provider, per in values.items()}


def _by_config(name: str, text: str, values: dict[str, dict[str, float]]) -> Family:
    """Per provider and configuration (the configurations as audit's --json names them)."""
    family = Family(name, text + " configuration: as audit --json names it (installed, dist, extension, both).")
    for provider, per in sorted(values.items()):
        for config, value in per.items():
            family.add(value, provider=provider, configuration=config)
    return family


STATUS_NAMES = _names(status_families([], None))
AUDIT_NAMES = _names(AuditMetrics(None).families())
