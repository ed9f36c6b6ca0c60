"""metrics.prom: the text exposition format node_exporter's textfile collector reads, checked by promtool."""
import json
import re
import shutil
import subprocess

import pytest

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _prometheus
from conftest import FIXTURES

RUN_DIR = FIXTURES / "report" / "run_slow_node"
PROMTOOL = "promtool"
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')


def load():
    return json.loads((RUN_DIR / "results.json").read_text())


def unescape(value):
    return re.sub(r'\\(.)', lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), value)


def parse(text):
    """{name: {"help", "type", "samples": [(labels dict, value)]}}, asserting the format on the way."""
    families, current = {}, None
    assert text.endswith("\n") and not text.endswith("\n\n")
    for line in text.split("\n")[:-1]:
        if line.startswith("# HELP "):
            name, help_text = line[7:].split(" ", 1)
            assert name not in families, "family %s twice" % name
            current = families[name] = {"help": help_text, "type": None, "samples": []}
            continue
        if line.startswith("# TYPE "):
            name, kind = line[7:].split(" ")
            assert name == current_name(families) and kind in ("gauge", "counter", "summary")
            families[name]["type"] = kind
            continue
        match = SAMPLE.match(line)
        assert match, "not a sample line: %r" % line
        name, labels_text, value = match.groups()
        assert name == current_name(families), "%s outside its family" % name
        labels = {}
        rest = labels_text or ""
        while rest:
            label = LABEL.match(rest)
            assert label, "bad labels in %r" % line
            labels[label.group(1)] = unescape(label.group(2))
            rest = rest[label.end():]
        float(value)
        current["samples"].append((labels, value))
    return families


def current_name(families):
    return list(families)[-1]


def series_of(families, name):
    return dict((tuple(sorted(labels.items())), value) for labels, value in families[name]["samples"])


def promtool_check(text):
    """promtool check metrics on text; the test fails (never skips) without promtool."""
    if not shutil.which(PROMTOOL):
        pytest.fail("promtool is missing: install the Debian package 'prometheus' (tools/install-system-deps.sh "
                    "does) to check metrics.prom against the exposition format", pytrace=False)
    return subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True,
                          timeout=60, check=False)


@pytest.fixture(scope="module")
def text():
    return _prometheus.render_textfile(load())


def test_promtool_accepts_the_file_without_a_lint_warning(text):
    proc = promtool_check(text)
    assert proc.returncode == 0 and proc.stdout.strip() == "" and proc.stderr.strip() == "", proc.stdout + proc.stderr


def test_every_family_has_help_and_type_and_no_series_is_duplicated(text):
    families = parse(text)
    for name, family in families.items():
        assert name.startswith("gpucluster_acceptance_") and family["help"] and family["type"]
        keys = [tuple(sorted(labels.items())) for labels, _value in family["samples"]]
        assert len(keys) == len(set(keys)), name
    assert "# TYPE" not in text.split("\n")[0]  # HELP first
    assert not re.search(r" \d{13}$", text, re.M)  # no timestamps: the textfile collector refuses them


def test_values_of_the_slow_node_run(text):
    families = parse(text)
    assert series_of(families, "gpucluster_acceptance_verdict") == {(): "0"}
    passed = series_of(families, "gpucluster_acceptance_node_passed")
    assert passed[(("node", "gpu014"),)] == "0" and passed[(("node", "gpu001"),)] == "1"
    status = series_of(families, "gpucluster_acceptance_node_status")
    assert status[(("node", "gpu003"), ("stage", "topology"))] == "0"
    assert status[(("node", "gpu003"), ("stage", "dcgm"))] == "1"
    assert status[(("node", "gpu014"), ("stage", "fabric"))] == "0"
    failed = families["gpucluster_acceptance_check_failed"]["samples"]
    assert len(failed) == 9
    assert ({"node": "gpu003", "stage": "topology", "check": "topology.nvlink", "component": "GPU2\u2194GPU5"}, "1") in failed
    busbw = series_of(families, "gpucluster_acceptance_busbw_bytes_per_second")
    assert float(busbw[(("kind", "single_node"), ("node", "gpu003"))]) == pytest.approx(21.4075e9)
    assert float(busbw[(("kind", "fabric"), ("node", "gpu014"))]) < 0.55 * float(busbw[(("kind", "fabric"), ("node", "gpu001"))])
    assert len([k for k in busbw if ("kind", "fabric") in k]) == 16
    verdict = series_of(families, "gpucluster_acceptance_fabric_verdict")
    assert verdict[(("node", "gpu014"), ("verdict", "pinned"))] == "1"
    steps = series_of(families, "gpucluster_acceptance_step_time_seconds")
    assert families["gpucluster_acceptance_step_time_seconds"]["type"] == "summary"
    assert len(steps) == 128 * 2 * 3
    key = (("node", "gpu014"), ("phase", "compute"), ("quantile", "0.5"), ("rank", "104"))
    assert 0.040 < float(steps[key]) < 0.042
    assert set(k[2][1] for k in steps) == {"0.5", "0.95", "0.99"}
    change = series_of(families, "gpucluster_acceptance_baseline_change_ratio")
    assert float(change[(("metric", "single_node_busbw"), ("node", "gpu003"))]) == pytest.approx(-0.954)
    assert series_of(families, "gpucluster_acceptance_checks")[(("status", "fail"),)] == "9"
    assert float(series_of(families, "gpucluster_acceptance_run_timestamp_seconds")[()]) > 1.7e9


HOSTILE = ['a"b', "back\\slash", "new\nline", 'all"\\\n', "{x=\"1\"}", "é ünïcode"]


def test_label_values_are_escaped_and_read_back_exactly():
    results = {"verdict": "fail", "run": {"id": 'run "1"\n'},
               "nodes": dict((name, {"status": "fail", "stages": {"st\"age": "fail"}, "problems": []}) for name in HOSTILE),
               "checks": [{"stage": "st\"age", "node": name, "check": "c\\heck", "status": "fail", "message": "",
                           "metrics": {}, "component": "comp\n"} for name in HOSTILE]}
    text = _prometheus.render_textfile(results)
    families = parse(text)
    nodes = [labels["node"] for labels, _value in families["gpucluster_acceptance_node_passed"]["samples"]]
    assert sorted(nodes) == sorted(HOSTILE)
    failed = families["gpucluster_acceptance_check_failed"]["samples"]
    assert all(labels["check"] == "c\\heck" and labels["component"] == "comp\n" for labels, _value in failed)
    assert families["gpucluster_acceptance_run_info"]["samples"][0][0]["run_id"] == 'run "1"\n'
    proc = promtool_check(text)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_duplicate_checks_are_counted_in_one_series():
    check = {"stage": "s", "node": "n", "check": "c", "status": "fail", "message": "", "metrics": {}, "component": None}
    text = _prometheus.render_textfile({"checks": [check, dict(check), dict(check, status="error")]})
    families = parse(text)
    assert families["gpucluster_acceptance_check_failed"]["samples"] == [
        ({"check": "c", "component": "", "node": "n", "stage": "s"}, "3")]


def test_absent_sections_give_no_empty_families_and_promtool_still_passes():
    for results in ({}, {"verdict": "pass", "checks": [], "nodes": {}}, None,
                    {"fabric": "x", "workload": {"ranks": [{"rank": 0, "node": "a", "compute_p50": 1.0, "sync_p999": 2}]}}):
        text = _prometheus.render_textfile(results)
        families = parse(text)
        assert all(f["samples"] for f in families.values())
        assert "gpucluster_acceptance_verdict" in families
        assert promtool_check(text).returncode == 0
    families = parse(_prometheus.render_textfile(
        {"workload": {"unit": "ms", "ranks": [{"rank": 0, "node": "a", "compute_p50": 1.0, "sync_p999": 2}]}}))
    steps = series_of(families, "gpucluster_acceptance_step_time_seconds")
    assert steps[(("node", "a"), ("phase", "sync"), ("quantile", "0.999"), ("rank", "0"))] == "0.002"


def test_numbers_are_written_in_the_exposition_format():
    assert _prometheus.format_value(float("nan")) == "NaN"
    assert _prometheus.format_value(float("inf")) == "+Inf"
    assert _prometheus.format_value(float("-inf")) == "-Inf"
    assert _prometheus.format_value(3.0) == "3"
    assert _prometheus.format_value(0.020100000000000003) == "0.0201"
    assert _prometheus.format_value(1795987135.147615).startswith("1795987135.1476")
    assert [_prometheus.quantile_of(q) for q in ("50", "5", "99", "999", "99.9", "100")] == [
        0.5, 0.05, 0.99, 0.999, pytest.approx(0.999), 1.0]
