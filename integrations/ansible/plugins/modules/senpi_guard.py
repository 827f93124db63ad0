"""Ansible module: keep the senpi installs of a host deduplicated with senpi-guard (its --json CLI)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: senpi_guard
short_description: Keep every senpi install of a host patched by senpi-guard, or take it all away
description:
  - Runs the host's own C(senpi-guard) with C(--json) and reports what it wrote.
  - C(state=present) is C(senpi-guard apply) (every install found, or the one C(root) names);
    C(state=absent) is C(senpi-guard uninstall) (every install reverted, the extension taken out of
    every agent dir, the daemon and senpi-guard's folders removed; the senpi package itself stays),
    or C(senpi-guard revert --root ROOT) when C(root) is given.
  - Check mode is senpi-guard's own dry run (every patch proven with node, nothing written).
  - With C(--diff), the unified diff of each file apply would change.
options:
  state:
    description: present (patched) or absent (senpi-guard's changes gone).
    type: str
    choices: [present, absent]
    default: present
  layers:
    description:
      - The layers senpi-guard keeps (C(layers) in its config.toml, which the watcher follows too).
        Left as configured when not given.
      - Only the top-level C(layers = ...) statement is replaced (or added first), whatever lines it
        spans; the result is read back with Python's C(tomllib) and written only if it is the old
        config with only C(layers) changed. A config.toml that is a link stays a link.
    type: list
    elements: str
    choices: [dist, extension]
  root:
    description: One install's package dir (C(--root)); every install on the host when not given.
    type: path
  executable:
    description: The senpi-guard to run; found on PATH (and in ~/.local/bin) when not given.
    type: path
author: senpi-guard
"""

EXAMPLES = r"""
- name: senpi sends each directive block once
  senpi_guard.fleet.senpi_guard:
    layers: [dist, extension]

- name: take senpi-guard off this host
  senpi_guard.fleet.senpi_guard:
    state: absent
"""

RETURN = r"""
changed:
  description: whether senpi-guard wrote (or, in check mode, would write) anything.
  type: bool
senpi_guard:
  description: senpi-guard's own JSON document for the run (apply, revert, status or uninstall).
  type: dict
"""

import json
import os
import re
import stat
import tempfile
import tomllib

from ansible.module_utils.basic import AnsibleModule


def run(module, exe, *args, config=None):
    """senpi-guard's JSON document for `args` (and its exit code); a run whose stdout is not one
    JSON document fails the task with its stderr."""
    argv = [exe, *args, "--json"] + (["--config", config] if config else [])
    rc, out, err = module.run_command(argv, environ_update={"NO_COLOR": "1"})
    try:
        doc = json.loads(out)
    except ValueError:
        module.fail_json(msg=f"{' '.join(argv)} printed no JSON (exit {rc}): {last_line(err)}", rc=rc)
    return rc, doc, err


def last_line(text):
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].removeprefix("senpi-guard: ") if lines else "no output"


def failure(doc, err):
    """The one line that says what failed: senpi-guard's error, else the first install or agent dir
    that did not end as wanted."""
    if doc.get("error"):
        return doc["error"]
    for item in [*doc.get("installs", []), *doc.get("extension", [])]:
        if not item.get("ok", True):
            where = item.get("package_dir") or item.get("path") or ""
            return f"{where}: {item.get('detail') or item.get('state')}"
    return last_line(err)


LAYERS_LINE = re.compile(r"""[ \t]*(layers|"layers"|'layers')[ \t]*=""")


def toml_lines(text):
    """The text's lines, each with its own end (TOML ends a line at LF or CRLF only)."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def parsed(text):
    """The text's TOML table (floats kept as written, so a nan equals itself), or None."""
    try:
        return tomllib.loads(text, parse_float=str)
    except tomllib.TOMLDecodeError:
        return None


def with_layers(text, layers):
    """The config's text with its top-level `layers` set: the whole `layers = ...` statement
    replaced, however many lines it spans (else the line added first), and every other byte kept.
    Returned only once tomllib reads it as the old table with only `layers` changed; ValueError
    (saying why) otherwise."""
    old = parsed(text)
    if old is None:
        raise ValueError("is not valid TOML")
    line = "layers = [" + ", ".join(json.dumps(layer) for layer in layers) + "]"
    want = {**old, "layers": list(layers)}
    lines = toml_lines(text)
    if "layers" not in old:
        candidates = [line + "\n" + text]
    else:  # (a line that only looks like one, in a table or a multi-line string, fails the check)
        candidates = (replaced(lines, at, line) for at, each in enumerate(lines) if LAYERS_LINE.match(each))
    for candidate in candidates:
        if candidate is not None and parsed(candidate) == want:
            return candidate
    raise ValueError("has no top-level `layers = ...` statement this module can replace (set it by hand)")


def replaced(lines, start, line):
    """The text with the statement that begins at lines[start] replaced by `line`: it ends on the
    first line at which it reads, alone, as one `layers` value (a TOML value ends its last line but
    for a comment); None when it never does."""
    for end in range(start, len(lines)):
        alone = parsed("".join(lines[start : end + 1]))
        if alone is not None and list(alone) == ["layers"]:
            ending = "\r\n" if lines[end].endswith("\r\n") else "\n"
            return "".join(lines[:start]) + line + ending + "".join(lines[end + 1 :])
    return None


def write_atomically(path, text):
    """Put `text` in place of the file `path` names, through a link to the file it points at (the
    link stays), keeping that file's mode and owner (a new file: 0600). OSError saying what, when
    it cannot: then nothing was changed."""
    target = os.path.realpath(path)
    named = target if target == os.path.abspath(path) else f"{target} (the file the link {path} points at)"
    try:
        now = os.stat(target)
    except FileNotFoundError:
        if os.path.islink(path):
            raise OSError(f"{path} is a link to {target}, which does not exist") from None
        now = None
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".config.", dir=os.path.dirname(target))
    except OSError as exc:
        raise OSError(f"cannot write {named}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            if now is not None:
                os.fchmod(handle.fileno(), stat.S_IMODE(now.st_mode) & 0o777)
                if (now.st_uid, now.st_gid) != (os.geteuid(), os.getegid()):
                    os.fchown(handle.fileno(), now.st_uid, now.st_gid)
            handle.write(text)
        os.replace(temp, target)
    except OSError as exc:
        os.unlink(temp)
        raise OSError(f"cannot write {named} keeping its mode and owner: {exc.strerror}") from None


def config_plan(module, exe):
    """(config path, its text now, the text `layers` asks for); the two texts are equal when
    nothing is to change. A config whose edit tomllib does not read as intended fails the task."""
    _rc, paths, err = run(module, exe, "paths")
    if "config_file" not in paths:
        module.fail_json(msg=f"senpi-guard paths: {failure(paths, err)}")
    path = paths["config_file"]
    text = ""
    if paths.get("config_file_exists"):
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
    wanted = module.params["layers"]
    if wanted is None or list(paths["config"]["layers"]) == list(wanted):
        return path, text, text
    try:
        return path, text, with_layers(text, wanted)
    except ValueError as exc:
        module.fail_json(msg=f"senpi-guard's config {path} {exc}; nothing was changed")


def present(module, exe, root_args):
    path, now, wanted = config_plan(module, exe)
    config_changes = now != wanted
    diff = {"before": now, "after": wanted, "before_header": path, "after_header": path} if config_changes else None
    with tempfile.TemporaryDirectory(prefix="senpi-guard-ansible-") as scratch:
        trial = None
        if config_changes:  # (senpi-guard reads the new config, and the dry run sees it, before it is written)
            trial = os.path.join(scratch, "config.toml")
            write_atomically(trial, wanted)
            rc, checked, err = run(module, exe, "paths", config=trial)
            if rc != 0:
                module.fail_json(msg=failure(checked, err).replace(trial, path), rc=rc, senpi_guard=checked)
        dry = None
        if module.check_mode or module._diff:
            rc, dry, err = run(module, exe, "apply", "--dry-run", *root_args, config=trial)
            if rc != 0:
                module.fail_json(msg=failure(dry, err), rc=rc, senpi_guard=dry)
        if module.check_mode:
            writes = any(o["would_write"] for o in dry["installs"]) or any(
                e.get("would_write") for e in dry.get("extension", [])
            )
            return config_changes or writes, dry, diffs(dry, diff)
    if config_changes:
        try:
            write_atomically(path, wanted)
        except OSError as exc:
            module.fail_json(msg=f"senpi-guard's config: {exc}; nothing was changed")
    rc, doc, err = run(module, exe, "apply", *root_args)
    if rc != 0:  # (a config written before is a change: the task says so)
        module.fail_json(msg=failure(doc, err), rc=rc, senpi_guard=doc, changed=config_changes)
    return config_changes or wrote(doc), doc, diffs(dry, diff) if dry else None


def wrote(doc):
    """Whether a run wrote anything: a file of an install, an agent dir's extension, or (uninstall)
    anything it says it changed."""
    return (
        bool(doc.get("changed"))
        or any(o.get("changed") for o in doc.get("installs", []))
        or any(e.get("changed") for e in doc.get("extension", []))
    )


def diffs(dry, config_diff):
    """Ansible's diff: the config change, then the unified diff of each file apply would write."""
    prepared = "".join(o.get("diff") or "" for o in dry["installs"])
    for e in dry.get("extension", []):
        if e.get("would_write"):
            prepared += f"+++ {e['path']} (the extension layer's file, new)\n"
    found = [config_diff] if config_diff else []
    if prepared:
        found.append({"prepared": prepared})
    return found


def absent(module, exe, root_args):
    if root_args:  # (that install only: revert has no dry run, so status says what it would do)
        _rc, status, err = run(module, exe, "status", *root_args)  # (its exit is 1 while unpatched)
        if status.get("error") or "installs" not in status:
            module.fail_json(msg=failure(status, err), senpi_guard=status)
        ours = [i for i in status["installs"] if has_ours(i)]
        if module.check_mode or not ours:
            return bool(ours), status, None
        rc, doc, err = run(module, exe, "revert", *root_args)
    else:
        rc, doc, err = run(module, exe, "uninstall", *(["--dry-run"] if module.check_mode else []))
    if rc != 0:
        module.fail_json(msg=failure(doc, err), rc=rc, senpi_guard=doc)
    return wrote(doc), doc, None


OURS_DIST = {"patched", "stale", "partial", "drifted"}  # (states revert takes back to the original)
OURS_EXTENSION = {"installed", "stale", "modified"}


def has_ours(install):
    layers = install.get("layers") or {}
    return layers.get("dist", install.get("state")) in OURS_DIST or layers.get("extension") in OURS_EXTENSION


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "layers": {"type": "list", "elements": "str", "choices": ["dist", "extension"]},
            "root": {"type": "path"},
            "executable": {"type": "path"},
        },
        supports_check_mode=True,
    )
    exe = module.params["executable"] or module.get_bin_path(
        "senpi-guard", required=True, opt_dirs=[os.path.expanduser("~/.local/bin")]
    )
    root_args = ["--root", module.params["root"]] if module.params["root"] else []
    act = present if module.params["state"] == "present" else absent
    changed, doc, diff = act(module, exe, root_args)
    result = {"changed": changed, "senpi_guard": doc}
    if diff and module._diff:
        result["diff"] = diff
    module.exit_json(**result)


if __name__ == "__main__":
    main()
