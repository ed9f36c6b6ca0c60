"""metrics.prom from a validated results.json: the text exposition format node_exporter's textfile collector reads,
checked by promtool."""
import re
import shutil
import subprocess

import pytest

import report_documents as docs
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _prometheus, _report_view

PROMTOOL = "promtool"
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')


def unescape(value):
    return re.sub(r'\\(.)', lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), value)


def parse(text):
    """{name: {"help", "type", "samples": [(labels dict, value)]}}, asserting the format on the way."""
    families = {}
    assert text.endswith("\n") and not text.endswith("\n\n")
    for line in text.split("\n")[:-1]:
        if line.startswith("# HELP "):
            name, help_text = line[7:].split(" ", 1)
            assert name not in families, "family %s twice" % name
            families[name] = {"help": help_text, "type": None, "samples": []}
            continue
        current = list(families)[-1]
        if line.startswith("# TYPE "):
            name, kind = line[7:].split(" ")
            assert name == current and kind in ("gauge", "counter", "summary")
            families[name]["type"] = kind
            continue
        match = SAMPLE.match(line)
        assert match, "not a sample line: %r" % line
        name, labels_text, value = match.groups()
        assert name == current, "%s outside its family" % name
        labels = {}
        rest = labels_text or ""
        while rest:
            label = LABEL.match(rest)
            assert label, "bad labels in %r" % line
            labels[label.group(1)] = unescape(label.group(2))
            rest = rest[label.end():]
        float(value)
        families[name]["samples"].append((labels, value))
    return families


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
def results():
    return docs.demo()


@pytest.fixture(scope="module")
def text(results):
    return _prometheus.render_textfile(results)


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


def test_values_of_the_demo_run_are_the_documents(text, results):
    families = parse(text)
    verdict = results["verdict"]
    assert series_of(families, "gpucluster_acceptance_verdict") == {(): "0"}
    assert series_of(families, "gpucluster_acceptance_nodes_failed") == {(): str(verdict["nodes_failed"])}
    assert series_of(families, "gpucluster_acceptance_cluster_failed") == {(): "1"}
    assert series_of(families, "gpucluster_acceptance_run_complete") == {(): "1"}
    passed = series_of(families, "gpucluster_acceptance_node_passed")
    assert sorted(k[0][1] for k, v in passed.items() if v == "0") == verdict["failed_nodes"]
    status = series_of(families, "gpucluster_acceptance_node_status")
    assert status[(("node", "gpu003"), ("stage", "topology"))] == "0"
    assert status[(("node", "gpu003"), ("stage", "dcgm"))] == "1"
    assert status[(("node", docs.DEMO_SLOW), ("stage", "fabric"))] == "0"
    assert (("node", "gpu003"), ("stage", "fabric")) not in status  # the stage never took it
    failed = families["gpucluster_acceptance_check_failed"]["samples"]
    assert sum(int(v) for _labels, v in failed) == 12 == len([c for c in results["checks"] if c["status"] in ("fail", "error")])
    assert ({"node": "cluster", "stage": "fabric", "check": "full_allocation", "component": "all 11 nodes"}, "1") in failed
    checks = series_of(families, "gpucluster_acceptance_checks")
    assert checks == {(("status", "pass"),): "578", (("status", "fail"),): "12", (("status", "error"),): "0",
                      (("status", "skip"),): "32"}
    nodes = series_of(families, "gpucluster_acceptance_nodes")
    assert nodes[(("status", "fail"),)] == "7" and nodes[(("status", "pass"),)] == "9" and nodes[(("status", "untested"),)] == "0"
    busbw = series_of(families, "gpucluster_acceptance_busbw_bytes_per_second")
    assert float(busbw[(("kind", "single_node"), ("node", "gpu003"))]) == pytest.approx(21.41e9, rel=1e-3)
    fabric = dict((k[1][1], float(v)) for k, v in busbw.items() if k[0] == ("kind", "fabric"))
    assert len(fabric) == 9  # the nodes with a pair in fabric.matrix
    assert fabric[docs.DEMO_SLOW] < 0.55 * fabric["gpu007"]
    verdicts = series_of(families, "gpucluster_acceptance_fabric_verdict")
    assert verdicts[(("node", docs.DEMO_SLOW), ("verdict", "pinned"))] == "1" and len(verdicts) == 11
    assert series_of(families, "gpucluster_acceptance_fabric_uplink_verdict") == {
        (("leaf", "leaf01"), ("verdict", "cleared")): "1", (("leaf", "leaf02"), ("verdict", "cleared")): "1"}
    steps = series_of(families, "gpucluster_acceptance_step_time_seconds")
    quantiles = sum(1 for r in results["workload"]["ranks"] for k in r if re.match(r"^[a-z]+_p\d+_ms$", k))
    assert len(steps) == quantiles and set(k[3][1] for k in steps) == set(str(r) for r in range(16))
    rank0 = results["workload"]["ranks"][0]
    assert float(steps[(("node", "gpu001"), ("phase", "compute"), ("quantile", "0.5"), ("rank", "0"))]) == \
        pytest.approx(rank0["compute_p50_ms"] / 1000.0)
    assert set(series_of(families, "gpucluster_acceptance_rank_flagged").values()) == {"0"}
    assert float(series_of(families, "gpucluster_acceptance_run_timestamp_seconds")[()]) > 1.7e9


def test_step_times_and_flags_from_workload_ranks():
    document = docs.workload_and_curves()
    families = parse(_prometheus.render_textfile(document))
    steps = series_of(families, "gpucluster_acceptance_step_time_seconds")
    assert families["gpucluster_acceptance_step_time_seconds"]["type"] == "summary"
    assert len(steps) == 6 * (3 + 2)  # compute p50/p95/p99, sync p50/p95
    assert steps[(("node", "gpu003"), ("phase", "compute"), ("quantile", "0.5"), ("rank", "4"))] == "0.016"
    assert set(k[2][1] for k in steps) == {"0.5", "0.95", "0.99"}
    flagged = series_of(families, "gpucluster_acceptance_rank_flagged")
    assert [k for k, v in flagged.items() if v == "1"] == [(("node", "gpu003"), ("rank", "4"))]
    assert promtool_check(_prometheus.render_textfile(document)).returncode == 0


def test_baseline_changes_from_the_baseline_checks():
    checks = [docs.check("baseline", "gpu001", "baseline.single_node_busbw", "fail", "gpu001 single-node busbw 21.4",
                         metrics={"metric": "single_node_busbw", "value": 21.4, "baseline": 465.0, "rel_diff": -0.954})]
    families = parse(_prometheus.render_textfile(docs.build(checks, ["gpu001"])))
    change = series_of(families, "gpucluster_acceptance_baseline_change_ratio")
    assert float(change[(("metric", "single_node_busbw"), ("node", "gpu001"))]) == pytest.approx(-0.954)


HOSTILE = ['a"b', "back\\slash", "new\nline", 'all"\\\n', "{x=\"1\"}", "é ünïcode"]


def test_label_values_are_escaped_and_read_back_exactly():
    checks = [docs.check("st\"age", name, "c\\heck", "fail", component="comp\n") for name in HOSTILE]
    document = docs.build(checks, HOSTILE, run=dict(docs.RUN, id='run "1"\n'))
    text = _prometheus.render_textfile(document)
    families = parse(text)
    nodes = [labels["node"] for labels, _value in families["gpucluster_acceptance_node_passed"]["samples"]]
    assert sorted(nodes) == sorted(HOSTILE)
    failed = families["gpucluster_acceptance_check_failed"]["samples"]
    assert all(labels["check"] == "c\\heck" and labels["component"] == "comp\n" for labels, _value in failed)
    assert families["gpucluster_acceptance_run_info"]["samples"][0][0]["run_id"] == 'run "1"\n'
    proc = promtool_check(text)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_duplicate_checks_are_counted_in_one_series():
    check = docs.check("s", "n", "c", "fail")
    families = parse(_prometheus.render_textfile(docs.build([check, dict(check), dict(check, status="error")], ["n"])))
    assert families["gpucluster_acceptance_check_failed"]["samples"] == [
        ({"check": "c", "component": "", "node": "n", "stage": "s"}, "3")]


@pytest.mark.parametrize("make", [docs.preflight_only, docs.scheduler_error, docs.replay_not_replayable])
def test_small_runs_give_no_empty_families_and_promtool_passes(make):
    text = _prometheus.render_textfile(make())
    families = parse(text)
    assert all(f["samples"] for f in families.values())
    assert "gpucluster_acceptance_verdict" in families
    assert promtool_check(text).returncode == 0


def test_a_document_without_a_readable_verdict_gives_no_metrics(results):
    with pytest.raises(_report_view.Problem, match="verdict"):
        _prometheus.render_textfile(docs.mutated(results, lambda d: d.update(verdict="fail")))


def test_a_malformed_section_gives_no_samples_of_its_own(results):
    families = parse(_prometheus.render_textfile(docs.mutated(results, lambda d: d["fabric"]["matrix"].update(x=1))))
    assert "gpucluster_acceptance_fabric_verdict" not in families and "gpucluster_acceptance_verdict" in families


def test_numbers_are_written_in_the_exposition_format():
    assert _prometheus.format_value(float("nan")) == "NaN"
    assert _prometheus.format_value(float("inf")) == "+Inf"
    assert _prometheus.format_value(float("-inf")) == "-Inf"
    assert _prometheus.format_value(3.0) == "3"
    assert _prometheus.format_value(0.020100000000000003) == "0.0201"
    assert _prometheus.format_value(1795987135.147615).startswith("1795987135.1476")
    assert [_prometheus.quantile_of(q) for q in ("50", "5", "99", "999", "99.9", "100")] == [
        0.5, 0.05, 0.99, 0.999, pytest.approx(0.999), 1.0]
