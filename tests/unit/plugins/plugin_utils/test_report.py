"""Verdict, per-node summary and JUnit output built from check results."""
import json
import xml.etree.ElementTree as ET

import xmlschema

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report
from conftest import FIXTURES

SCHEMA = xmlschema.XMLSchema(str(FIXTURES / "junit" / "junit-ci.xsd"))


def check(stage, node, name, status, message="", metrics=None, component=None):
    return {"stage": stage, "node": node, "check": name, "status": status, "message": message,
            "metrics": metrics or {}, "component": component}


CHECKS = [
    check("topology", "gpu001", "nvlink", "pass", "all pairs NV18", {"pairs": 28}),
    check("topology", "gpu003", "nvlink", "fail", "GPU2<->GPU5 is SYS, expected NV18", {"pairs_bad": 1}, "GPU2-GPU5"),
    check("dcgm", "gpu004", "collect", "error", "gpu004 dcgm: dcgmi-diag: timed out after 60 s and was killed"),
    check("dcgm", "gpu001", "diag", "skip", "level 1 skips Memory"),
]


def test_verdict_fails_on_any_fail_or_error_and_on_no_checks():
    assert _report.verdict(CHECKS) == "fail"
    assert _report.verdict([c for c in CHECKS if c["status"] in ("pass", "skip")]) == "pass"
    assert _report.verdict([]) == "fail"


def test_node_summary_takes_the_worst_status_per_stage_and_node():
    summary = _report.node_summary(CHECKS, nodes=["gpu001", "gpu002", "gpu003", "gpu004"])
    assert summary["gpu001"]["status"] == "pass"
    assert summary["gpu002"] == {"status": "pass", "stages": {}, "problems": []}
    assert summary["gpu003"]["status"] == "fail"
    assert summary["gpu003"]["problems"] == ["FAIL topology: GPU2<->GPU5 is SYS, expected NV18"]
    assert summary["gpu004"]["status"] == "error"


def test_junit_is_schema_valid_with_one_case_per_stage_check_node():
    xml = _report.junit_xml(CHECKS, "run-1", stage_order=["topology", "dcgm"])
    SCHEMA.validate(xml)
    root = ET.fromstring(xml)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["topology", "dcgm"]
    cases = root.findall(".//testcase")
    assert len(cases) == len(CHECKS)
    bad = [c for c in cases if c.find("failure") is not None]
    assert len(bad) == 1
    assert bad[0].get("classname") == "topology"
    assert bad[0].get("name") == "gpu003: nvlink [GPU2-GPU5]"
    assert bad[0].find("failure").get("message") == "GPU2<->GPU5 is SYS, expected NV18"
    errors = [c for c in cases if c.find("error") is not None]
    assert errors[0].get("name") == "gpu004: collect"
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["gpu003.nvlink.pairs_bad"] == "1"
    assert json.loads(bad[0].find("system-out").text) == {"pairs_bad": 1}


def test_summary_names_each_bad_node_with_stage_and_reason():
    lines = _report.summary_lines(CHECKS, ["gpu001", "gpu003", "gpu004"], "/tmp/run")
    assert lines[0].startswith("gpucluster.acceptance verdict: FAIL")
    assert "  gpu003 FAIL topology: GPU2<->GPU5 is SYS, expected NV18" in lines
    assert any(line.startswith("  gpu004 ERROR dcgm:") for line in lines)
    assert not any("gpu001" in line for line in lines[1:])
