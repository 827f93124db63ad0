"""io/reader is the only way senpi-guard reads a file: outside src/senpi_guard/io/ no module opens or
reads one itself. Parsed with `ast`, every module of src/: a call to `open`, `os.open`, `os.fdopen`,
or to a method `open`, `read_text`, `read_bytes`, `readline`, `readlines` fails the test, unless

- it reads senpi-guard's own package data through importlib.resources (`resources.files(…)….read_text()`;
  a path to such data is read with `reader.own_data`), or
- it opens for writing alone (a mode of "w", "a" or "x"; os.open with O_WRONLY): the reader is for reads,
  or
- it is on ALLOWED below, with the reason.

Inside io/, a read of a whole file with no bound (`.read()`, `.read_bytes()`, `.read_text()`,
`.readlines()`) is only for senpi-guard's own private files, each on WHOLE below with the reason: a
user's file (a dist/ file re-checked before its rename, an extension) is read up to a size known
first (`reader.bounded`, `handle.read(size + 1)`), so a sparse giant or a FIFO swapped in is never
read whole."""

from __future__ import annotations

import ast
from pathlib import Path

import senpi_guard

SRC = Path(senpi_guard.__file__).parent
READS = frozenset({"open", "fdopen", "read_text", "read_bytes", "readline", "readlines"})
# (module under src/senpi_guard, the call's source text) -> why it may read by itself. Every other
# read outside io/ goes through io/reader.
ALLOWED: dict[tuple[str, str], str] = {
    ("keep/managers.py", "os.open(path, os.O_RDONLY | os.O_NOFOLLOW)"): (
        "/proc/<pid>/stat and cmdline: the kernel's, not a user's file, read up to READ_MAX bytes"
    ),
}
WHOLE_READS = frozenset({"read", "read_bytes", "read_text", "readlines"})
# (module under src/senpi_guard/io, the call's source text) -> the private file it reads whole.
OWN = "senpi-guard's own private state, in a folder of the effective uid's"
WHOLE: dict[tuple[str, str], str] = {
    ("io/memo.py", "handle.read()"): "senpi-guard's memo, read once its owner and mode are checked as its own",
    ("io/store.py", 'meta.read_text("utf-8")'): f"a backup's record: {OWN}",
    ("io/store.py", "blob.read_bytes()"): f"a backup: {OWN}",
    ("io/store.py", "self.pid_file.read_text()"): f"the watcher's pid file: {OWN}",
    ("io/reader.py", "(Path(path) if isinstance(path, str) else path).read_bytes()"): "own_data: the package's data",
    ("io/unpack.py", "pipe.read()"): "a pipe from a child senpi-guard forked itself: its one line of error",
}


def _of_resources(node: ast.expr) -> bool:
    """Whether a call chain starts at `resources.files(…)` (importlib.resources: package data)."""
    while isinstance(node, ast.Call | ast.Attribute):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "files"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "resources"
        ):
            return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return False


def _names(node: ast.expr) -> set[str]:
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)} | {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name)
    }


def _writes_only(call: ast.Call, name: str, receiver: ast.expr | None) -> bool:
    """An open for writing alone: a literal mode with w, a or x (no +), or os.open with O_WRONLY."""
    if name == "open" and isinstance(receiver, ast.Name) and receiver.id == "os":
        flags = call.args[1] if len(call.args) > 1 else None
        return flags is not None and "O_WRONLY" in _names(flags)
    at = 1 if receiver is None else 0  # (open(path, mode) / path.open(mode))
    mode = call.args[at] if len(call.args) > at else next((k.value for k in call.keywords if k.arg == "mode"), None)
    text = mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else ""
    return bool(text) and any(c in text for c in "wax") and "+" not in text


def reads_in(source: str, rel: str) -> list[str]:
    """Every read a module's source makes by itself (`rel:line: call`), ALLOWED left out."""
    found = []
    for node in ast.walk(ast.parse(source, rel)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            name, receiver = "open", None
        elif isinstance(func, ast.Attribute) and func.attr in READS:
            name, receiver = func.attr, func.value
            if _of_resources(receiver):
                continue
        else:
            continue
        if _writes_only(node, name, receiver):
            continue
        text = ast.get_source_segment(source, node) or name
        if (rel, text) not in ALLOWED:
            found.append(f"{rel}:{node.lineno}: {text}")
    return found


def whole_reads_in(source: str, rel: str) -> list[str]:
    """Every read of a whole file with no bound a module of io/ makes (`rel:line: call`), WHOLE left out."""
    found = []
    for node in ast.walk(ast.parse(source, rel)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in WHOLE_READS or _of_resources(node.func.value):
            continue
        if node.func.attr in ("read", "readlines") and node.args:  # (a size given: bounded)
            continue
        if isinstance(node.func.value, ast.Name) and node.func.value.id == "os":
            continue
        text = ast.get_source_segment(source, node) or node.func.attr
        if (rel, text) not in WHOLE:
            found.append(f"{rel}:{node.lineno}: {text}")
    return found


def test_io_reads_no_user_file_whole():
    found = []
    for path in sorted((SRC / "io").glob("*.py")):
        found += whole_reads_in(path.read_text("utf-8"), f"io/{path.name}")
    assert not found, "read a user's file up to a size known first (reader.bounded, read(size + 1)):\n" + "\n".join(
        found
    )


def test_the_whole_read_scan_sees_an_unbounded_read():
    cases = {
        "hashlib.sha256(handle.read()).hexdigest()": True,  # (io/write._current_sha, before)
        "data = handle.read()": True,
        "p.read_bytes()": True,
        "p.read_text('utf-8')": True,
        "h.readlines()": True,
        "handle.read(size + 1)": False,
        "reader.bounded(handle, path, reader.DIST)": False,
        "os.read(fd, CHUNK)": False,
        "resources.files('x').joinpath('y').read_text('utf-8')": False,
    }
    for text, flagged in cases.items():
        assert bool(whole_reads_in(text, "io/write.py")) == flagged, text


def test_no_module_outside_io_reads_a_file_itself():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if not rel.startswith("io/"):
            found += reads_in(path.read_text("utf-8"), rel)
    assert not found, "read through senpi_guard.io.reader (or reader.own_data for package data):\n" + "\n".join(found)


def test_the_scan_sees_each_kind_of_read():
    """What the scan must see is seen, and what it lets pass is let pass."""
    cases = {
        "open(p)": True,
        "open(p, 'rb')": True,
        "open(p, 'r+')": True,
        "os.open(p, os.O_RDONLY)": True,
        "os.open(p, os.O_RDWR | os.O_CREAT)": True,
        "os.fdopen(fd, 'rb')": True,
        "io.open(p)": True,
        "p.read_text('utf-8')": True,
        "p.read_bytes()": True,
        "h.readline(10)": True,
        "h.readlines()": True,
        "p.open('rb')": True,
        "p.open()": True,
        "p.open('w')": False,
        "open(p, mode='a')": False,
        "os.open(p, os.O_WRONLY | os.O_CREAT)": False,
        "resources.files('x').joinpath('y').read_text('utf-8')": False,
        "reader.read(p, reader.MANIFEST)": False,
        "subprocess.Popen(argv)": False,
    }
    for text, flagged in cases.items():
        assert bool(reads_in(text, "case.py")) == flagged, text
