"""Where senpi-guard keeps its own files (XDG variables are honoured through platformdirs)."""

from pathlib import Path

import platformdirs

APP = "senpi-guard"


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP))


def config_file() -> Path:
    return config_dir() / "config.toml"


def data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP))


def backups_dir() -> Path:
    return data_dir() / "backups"


def state_dir() -> Path:
    return Path(platformdirs.user_state_dir(APP))


def state_file() -> Path:
    return state_dir() / "state.json"


def lock_file() -> Path:
    return state_dir() / "write.lock"


def log_dir() -> Path:
    return Path(platformdirs.user_log_dir(APP))
