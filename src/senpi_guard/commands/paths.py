"""`senpi-guard paths`: the effective config and every file and folder senpi-guard uses."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any

from senpi_guard.commands import common
from senpi_guard.core import agentdir
from senpi_guard.core.patch import definition
from senpi_guard.io import config as config_mod
from senpi_guard.io import made, store
from senpi_guard.keep import service

SUMMARY = "show the effective config and every path senpi-guard reads or writes"
EXAMPLE = "senpi-guard paths --json"
EXITS = "0 shown; 1 the config file is broken (the error says where)"


def configure(parser) -> None:
    common.add_json(parser)


def collect() -> dict[str, Any]:
    patches = definition.load_all()
    config = config_mod.load()
    definition.check_config(patches, config)
    where = store.Store()
    settings = {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in dataclasses.asdict(config).items()
        if k not in ("source", "tables", "loose")
    }
    settings["patches"] = {
        p.name: {k: list(v) if isinstance(v, tuple) else v for k, v in p.settings(config).items()} for p in patches
    }
    config_file = config_mod.config_path()
    unit = service.launchd_plist_path() if sys.platform == "darwin" else service.systemd_unit_path()
    return {
        "config_file": str(config_file),
        "config_file_exists": config_file.is_file(),
        "config": settings,
        "patches": str(definition.patches_root()),
        "data_dir": str(where.data_dir),
        "backups": str(where.backups_dir),
        "state_dir": str(where.state_dir),
        "records": str(where.records_file),
        "write_lock": str(where.lock_file),
        "watcher_pid_file": str(where.pid_file),
        "log_dir": str(store.log_dir()),
        "cache_dir": str(store.cache_dir()),
        "service_file": str(unit),
        "senpi_agent_dir": str(agentdir.default_agent_dir()),
        "project_agent_dirs": [str(p) for p in where.agent_dirs()],
        "made_folders": str(made.record_file()),
    }


def run(args) -> int:
    found = collect()
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    source = "" if found["config_file_exists"] else "  (not there: defaults in use)"
    print(f"config file        {found['config_file']}{source}")
    rows = []
    for key, value in found["config"].items():
        if key == "patches":
            rows += [(f"{name}.{setting}", item) for name, table in value.items() for setting, item in table.items()]
        else:
            rows.append((key, value))
    width = max(17, *(len(key) + 2 for key, _ in rows))
    for key, value in rows:
        shown = (
            ", ".join(map(str, value))
            if isinstance(value, list | tuple)
            else f"{value:g}"
            if isinstance(value, float)
            else value
        )
        print(f"  {key:<{width}}{shown}")
    for key in (
        "patches",
        "data_dir",
        "backups",
        "state_dir",
        "records",
        "write_lock",
        "watcher_pid_file",
        "log_dir",
        "cache_dir",
        "service_file",
        "senpi_agent_dir",
        "made_folders",
    ):
        print(f"{key.replace('_', ' '):<19}{found[key]}")
    for folder in found["project_agent_dirs"] or ["none: `apply --here` adds one"]:
        is_gone = os.path.isabs(folder) and not os.path.isdir(folder)
        note = "  (gone: moved or removed; `apply` forgets it)" if is_gone else ""
        print(f"{'project agent dir':<19}{folder}{note}")
    return 0
