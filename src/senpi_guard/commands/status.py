from __future__ import annotations

import json
import time
from typing import Any

from senpi_guard import engine, state, watcher
from senpi_guard.commands import common


def _when(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp)) if stamp else "never"


def collect(args) -> list[dict[str, Any]]:
    patch, config = common.load()
    records = state.load_records()
    rows = []
    for install in common.installs(args):
        insp = engine.inspect(install, patch, config)
        record = state.install_record(install.package_dir, records)
        rows.append({
            "package_dir": str(install.package_dir),
            "version": install.version,
            "manager": install.manager,
            "target": str(insp.prompt.path) if insp.prompt else None,
            "state": insp.state,
            "upstream_dedupe": insp.upstream_present,
            "detail": insp.detail,
            "last_verify": record.get("last_verify"),
            "last_reconcile": record.get("last_reconcile"),
        })
    return rows


def run(args) -> int:
    rows = collect(args)
    running = watcher.running_watcher()
    if args.json:
        print(json.dumps({"installs": rows, "watcher": running}, indent=2))
    else:
        print("watcher: " + (f"running, pid {running['pid']} since {_when(running['since'])}"
                             if running else "not running (senpi-guard daemon install)"))
        for row in rows:
            print(f"senpi {row['version']} ({row['manager']})  {row['package_dir']}")
            print(f"  state     {row['state']}")
            if row["target"]:
                print(f"  target    {row['target']}")
            upstream = "dedupeUltraworkBlocks present" if row["upstream_dedupe"] else "no dedupe of its own"
            print(f"  upstream  {upstream}")
            last = row["last_verify"]
            verdict = "never verified" if not last else (
                f"{'passed' if last.get('ok') else 'FAILED'} {last.get('checks', 0)} checks at "
                f"{_when(last.get('time'))}")
            print(f"  verified  {verdict}")
            last = row["last_reconcile"]
            if last:
                outcome = "ok" if last.get("ok") else "FAILED"
                print(f"  watcher   last reconcile {_when(last.get('time'))}: {last.get('before')} -> "
                      f"{last.get('after')} ({outcome}, {last.get('trigger', '').split(' ')[0]})")
            if row["detail"]:
                print(f"  detail    {row['detail']}")
    return 0 if rows and all(r["state"] == "patched" for r in rows) else 1
