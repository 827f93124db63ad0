"""`status` and `audit` as Prometheus metrics: read with prometheus_client's own parser, each figure
checked against the --json output of the same state, and `--textfile DIR` as node_exporter reads it."""

from __future__ import annotations

import json
import stat
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import run_cli
from prometheus_client.parser import text_string_to_metric_families
from test_audit_money_cli import priced_package, with_cost

from senpi_guard.commands import metrics as cli_metrics
from senpi_guard.demo import sample, sample_session

COUNTED = ("full", "delta", "context", "summary")


def metrics(text: str) -> dict[str, dict[tuple, float]]:
    """Every family's samples, keyed by their labels (sorted pairs); each family is a gauge."""
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge" and family.documentation, family.name
        assert family.name.startswith("senpi_guard_")
        out[family.name] = {tuple(sorted(s.labels.items())): s.value for s in family.samples}
    return out


def value(found: dict[tuple, float], **labels: str) -> float:
    return found[tuple(sorted(labels.items()))]


def test_status_metrics_are_the_json_rows(tmp_path, capsys):
    patched, plain = tmp_path / "a" / "pkg", tmp_path / 'odd "name" \\ b' / "pkg"
    sample.write_sample_package(patched, 2, fillers=0)
    sample.write_sample_package(plain, 3, fillers=0)
    code, _, err = run_cli(capsys, "apply", "--root", patched)
    assert code == 0, err
    roots = ("--root", patched, "--root", plain)
    code, out, err = run_cli(capsys, "status", *roots, "--json")
    assert code == 1, err  # (one install is not patched)
    rows = json.loads(out)["installs"]
    code, text, err = run_cli(capsys, "status", *roots, "--format", "prometheus")
    assert code == 1 and not err
    found = metrics(text)
    assert len(rows) == 2 and {r["state"] for r in rows} == {"patched", "unpatched"}
    for row in rows:
        install = row["package_dir"]
        info = value(found["senpi_guard_install_info"], install=install, version=row["version"], manager="npm")
        assert info == 1
        mine = {labels: v for labels, v in found["senpi_guard_install_state"].items() if ("install", install) in labels}
        assert sum(mine.values()) == 1 and value(mine, install=install, state=row["state"]) == 1
        assert value(found["senpi_guard_install_as_wanted"], install=install) == float(row["as_wanted"])
        for sub in row["patches"]:
            where = {"install": install, "patch": sub["patch"]}
            for layer, done in (("dist", "patched"), ("extension", "installed")):
                state = sub["layers"][layer]
                if state is None:
                    assert (*sorted({**where, "layer": layer}.items()),) not in found[
                        "senpi_guard_install_layer_patched"
                    ]
                    continue
                assert value(found["senpi_guard_install_layer_patched"], **where, layer=layer) == float(state == done)
                assert value(found["senpi_guard_install_layer_state"], **where, layer=layer, state=state) == 1
            last = sub["last_verify"]
            if last:
                now = last["ok"] and sub["last_verify_of_these_files"]
                assert value(found["senpi_guard_install_last_verify_ok"], **where) == float(now)
                assert value(found["senpi_guard_install_last_verify_timestamp_seconds"], **where) == last["time"]
    by_install = {r["package_dir"]: r for r in rows}
    assert by_install[str(patched)]["patches"][0]["last_verify"]["ok"]  # (apply verified it: checked above)
    assert value(
        found["senpi_guard_install_layer_patched"], install=str(patched), patch="directive-dedupe", layer="dist"
    )
    assert found["senpi_guard_watcher_running"] == {(): 0.0}


def sessions(tmp_path: Path, agent_dir: Path) -> Path:
    """A priced install and two sessions in its agent dir: one on the API (dollars), one on a plan."""
    pkg = priced_package(tmp_path)
    folder = agent_dir / "sessions" / "--work--"
    folder.mkdir(parents=True)
    with_cost(
        sample_session.write_sample_session(
            folder / "a.jsonl", turns=6, directive_bytes=5000, provider="anthropic", extras=False
        )
    )
    sample_session.write_sample_session(folder / "b.jsonl", turns=6, directive_bytes=5000, lanes=True, extras=False)
    return pkg


def test_audit_metrics_count_the_warnings_and_stderr_names_them(tmp_path, capsys, isolated_dirs):
    """What an audit skipped is in its metrics and named on stderr (before: in neither, so a
    dashboard showed figures from a session half of which could not be read)."""
    pkg = sessions(tmp_path, isolated_dirs / "agent")
    first = sorted((isolated_dirs / "agent" / "sessions").rglob("*.jsonl"))[0]
    with first.open("a") as handle:
        handle.write("{not json\n")
    code, out, err = run_cli(capsys, "audit", "--all", "--root", pkg, "--json")
    assert code == 0, err
    skipped = sum(sum(r["warnings"].values()) for r in json.loads(out)["sessions"])
    assert skipped >= 1
    code, text, err = run_cli(capsys, "audit", "--all", "--root", pkg, "--format", "prometheus")
    assert code == 0 and f"warnings in {first}: skipped" in err, err
    assert metrics(text)["senpi_guard_audit_warnings"] == {(): skipped}


def test_audit_metrics_sum_the_json_per_provider(tmp_path, capsys, isolated_dirs):
    pkg = sessions(tmp_path, isolated_dirs / "agent")
    code, out, err = run_cli(capsys, "audit", "--all", "--root", pkg, "--json")
    assert code == 0, err
    reports = json.loads(out)["sessions"]
    code, text, err = run_cli(capsys, "audit", "--all", "--root", pkg, "--format", "prometheus")
    assert code == 0, err
    found = metrics(text)
    calls: dict[str, int] = defaultdict(int)
    sizes: dict[tuple, int] = defaultdict(int)
    for report in reports:
        for turn in report["turns"]:
            if turn["sent"] in COUNTED:
                calls[turn["provider"]] += 1
                for config, n in turn["bytes"].items():
                    sizes[turn["provider"], config] += n
    assert len(calls) == 2 and all(calls.values())  # anthropic and the plan's provider
    assert found["senpi_guard_audit_sessions"] == {(("outcome", "audited"),): 2, (("outcome", "failed"),): 0}
    assert {dict(k)["provider"]: v for k, v in found["senpi_guard_audit_calls"].items()} == calls
    for (provider, config), n in sizes.items():
        assert value(found["senpi_guard_audit_prompt_bytes"], provider=provider, configuration=config) == n
        if config != "installed":
            saved = sizes[provider, "installed"] - n
            assert (
                value(found["senpi_guard_audit_saved_prompt_bytes"], provider=provider, configuration=config) == saved
            )
    groups = [g for r in reports for g in r["summary"]["money"]["by_model"]]
    assert {g["provider"] for g in groups} == set(calls)
    for group in groups:
        provider = group["provider"]
        for config, tokens in group["tokens"].items():
            assert value(found["senpi_guard_audit_tokens"], provider=provider, configuration=config) == tokens["total"]
        both = value(found["senpi_guard_audit_saved_tokens"], provider=provider, configuration="both")
        assert both == group["saved_tokens"]["both"]["total"] > 0
        cost = {
            dict(k)["configuration"]: v
            for k, v in found["senpi_guard_audit_cost_usd"].items()
            if dict(k)["provider"] == provider
        }
        if group["usd"] is None:  # (the plan pays no list price: no dollars are claimed)
            assert cost == {} and group["subscription"]
            continue
        assert cost == pytest.approx(group["usd"]) and cost["both"] < cost["installed"]
        saved = value(found["senpi_guard_audit_saved_usd"], provider=provider, configuration="both")
        assert saved == pytest.approx(group["saved_usd"]["both"]) and saved > 0


def test_textfile_holds_both_commands_metrics(tmp_path, capsys, isolated_dirs):
    pkg = sessions(tmp_path, isolated_dirs / "agent")
    folder = tmp_path / "textfile"
    folder.mkdir()
    target = folder / "senpi_guard.prom"
    target.write_text("# an old file\nsenpi_guard_gone 1\n")
    code, out, err = run_cli(capsys, "status", "--root", pkg, "--textfile", folder)
    assert code == 1 and out == f"metrics written to {target}\n", err
    code, out, err = run_cli(capsys, "-q", "audit", "--all", "--root", pkg, "--textfile", folder)
    assert code == 0 and out == "", err
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in folder.iterdir()] == ["senpi_guard.prom"]  # no temp file left beside it
    first = metrics(target.read_text())
    assert "senpi_guard_gone" not in first
    assert value(first["senpi_guard_install_info"], install=str(pkg), version="2026.8.1", manager="npm") == 1
    assert first["senpi_guard_audit_sessions"][(("outcome", "audited"),)] == 2
    run_cli(capsys, "apply", "--root", pkg)
    code, _, err = run_cli(capsys, "status", "--root", pkg, "--textfile", folder)
    assert code == 0, err
    again = metrics(target.read_text())
    assert value(again["senpi_guard_install_state"], install=str(pkg), state="patched") == 1  # status's: replaced
    for name in first:  # audit's: kept as they were
        if name.startswith("senpi_guard_audit_"):
            assert again[name] == first[name], name


@pytest.mark.parametrize("bad", ["missing", "a-file"])
def test_a_bad_textfile_folder_is_one_line_before_any_work(tmp_path, capsys, bad):
    pkg = tmp_path / "pkg"
    sample.write_sample_package(pkg, 2, fillers=0)
    folder = tmp_path / bad
    if bad == "a-file":
        folder.write_text("x")
    for command in ("status", "audit"):
        extra = ("--latest",) if command == "audit" else ()
        code, out, err = run_cli(capsys, command, *extra, "--root", pkg, "--textfile", folder)
        assert code == 1 and out == "", err
        assert err.count("\n") == 1 and str(folder) in err and err.startswith("senpi-guard: error: the metrics folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"pkg", bad} if bad == "a-file" else {"pkg"})


def test_formats_that_ask_for_two_things_are_usage_errors(tmp_path, capsys):
    for args, said in (
        (("--json", "--format", "prometheus"), "--json and --format prometheus ask for two formats; give one"),
        (("--format", "text", "--textfile", tmp_path), "--textfile writes Prometheus metrics; drop --format text"),
    ):
        code, out, err = run_cli(capsys, "status", "--root", tmp_path, *args)
        assert code == 2 and said in err and not list(tmp_path.iterdir()), err
        # (with --json the error is a JSON document too, as every --json error is)
        assert (json.loads(out)["error"] == said) if "--json" in args else out == ""


def test_the_docs_name_every_metric_and_their_sample_file_is_what_the_commands_write():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text("utf-8")
    every = cli_metrics.STATUS_NAMES | cli_metrics.AUDIT_NAMES
    assert not cli_metrics.STATUS_NAMES & cli_metrics.AUDIT_NAMES  # (each family is one command's)
    for name in every:
        assert f"| `{name}` |" in doc, f"docs/metrics.md has no row for {name}"
    sample = doc.split("```text\n", 1)[1].split("```", 1)[0]
    assert set(metrics(sample)) == every
