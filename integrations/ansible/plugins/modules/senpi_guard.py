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
import tempfile

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


def with_layers(text, layers):
    """The config's text with its top-level `layers` set (the line replaced, else added first)."""
    line = "layers = [" + ", ".join(json.dumps(layer) for layer in layers) + "]"
    out, done, top = [], False, True
    for current in text.splitlines():
        if current.lstrip().startswith("["):
            top = False
        if top and not done and current.split("=", 1)[0].strip() == "layers":
            out.append(line)
            done = True
        else:
            out.append(current)
    return "\n".join(out if done else [line, *out]) + "\n"


def write_atomically(path, text):
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".config.", dir=folder)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(temp, path)


def config_plan(module, exe):
    """(config path, its text now, the text `layers` asks for); the two texts are equal when
    nothing is to change."""
    _rc, paths, err = run(module, exe, "paths")
    if "config_file" not in paths:
        module.fail_json(msg=f"senpi-guard paths: {failure(paths, err)}")
    path = paths["config_file"]
    text = ""
    if paths.get("config_file_exists"):
        with open(path) as handle:
            text = handle.read()
    wanted = module.params["layers"]
    if wanted is None or list(paths["config"]["layers"]) == list(wanted):
        return path, text, text
    return path, text, with_layers(text, wanted)


def present(module, exe, root_args):
    path, now, wanted = config_plan(module, exe)
    config_changes = now != wanted
    diff = {"before": now, "after": wanted, "before_header": path, "after_header": path} if config_changes else None
    with tempfile.TemporaryDirectory(prefix="senpi-guard-ansible-") as scratch:
        trial = None
        if config_changes:  # (the dry run sees the config as it will be)
            trial = os.path.join(scratch, "config.toml")
            write_atomically(trial, wanted)
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
        write_atomically(path, wanted)
    rc, doc, err = run(module, exe, "apply", *root_args)
    if rc != 0:
        module.fail_json(msg=failure(doc, err), rc=rc, senpi_guard=doc)
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
