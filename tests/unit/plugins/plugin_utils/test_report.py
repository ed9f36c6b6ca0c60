"""junit.xml, the console summary and the final message, rendered from one results document."""
import json
import xml.etree.ElementTree as ET

import xmlschema

from ansible_collections.gpucluster.acceptance.plugins.plugin_utils import _report, _results
from conftest import FIXTURES

SCHEMA = xmlschema.XMLSchema(str(FIXTURES / "junit" / "junit-ci.xsd"))


def check(stage, node, name, status, message="", metrics=None, component=None, evidence=None, seconds=None):
    return {"stage": stage, "node": node, "check": name, "status": status, "message": message,
            "metrics": metrics or {}, "component": component, "evidence": evidence or [], "seconds": seconds}


CHECKS = [
    check("topology", "gpu001", "nvlink", "pass", "all pairs NV18", {"pairs": 28}, seconds=0.41),
    check("topology", "gpu003", "nvlink", "fail", "GPU2<->GPU5 is SYS, expected NV18", {"pairs_bad": 1}, "GPU2-GPU5",
          evidence=["GPU2\tNV18\tNV18\t X \tNV18\tNV18\tSYS", "GPU5\tNV18\tNV18\tSYS\tNV18\tNV18\t X "], seconds=0.52),
    check("dcgm", "gpu004", "collect", "error", "gpu004 dcgm: dcgmi-diag: timed out after 60 s and was killed"),
    check("dcgm", "gpu001", "diag", "skip", "level 1 skips Memory"),
    check("fabric", None, "full_allocation", "fail", "4-node busbw 120 GB/s, below the 300 GB/s floor"),
]


def document(checks=None, nodes=("gpu001", "gpu003", "gpu004")):
    checks = CHECKS if checks is None else checks
    doc = _results.build_document({"id": "run-1", "playbook": "acceptance.yml", "started": "t0"}, checks, nodes)
    assert _results.validate(doc) == []
    return doc


def test_junit_is_schema_valid_with_one_case_per_stage_check_node_time_and_evidence():
    xml = _report.junit_xml(document())
    SCHEMA.validate(xml)
    root = ET.fromstring(xml)
    assert [s.get("name") for s in root.findall("testsuite")] == ["topology", "dcgm", "fabric"]
    cases = root.findall(".//testcase")
    assert len(cases) == len(CHECKS)
    bad = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in bad] == ["gpu003: nvlink [GPU2-GPU5]", "cluster: full_allocation"]
    failure = bad[0].find("failure")
    assert failure.get("message") == "GPU2<->GPU5 is SYS, expected NV18"
    assert failure.text.splitlines() == CHECKS[1]["evidence"]    # the evidence is the failure text
    assert float(bad[0].get("time")) == 0.52                      # the time the tool took
    errors = [c for c in cases if c.find("error") is not None]
    assert errors[0].get("name") == "gpu004: collect"
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["gpu003.nvlink.pairs_bad"] == "1"
    assert json.loads(bad[0].find("system-out").text) == {"pairs_bad": 1}


def test_summary_and_final_message_count_the_same_failed_nodes():
    doc = document()
    lines = _report.summary_lines(doc, "/tmp/run")
    assert lines[0] == ("gpucluster.acceptance verdict: FAIL — 2 of 3 node(s) failed (1 with a measured fault; "
                        "1 not judged — tool error: 1), 5 check(s), cluster-level problems")
    assert "  gpu003 FAIL topology: GPU2<->GPU5 is SYS, expected NV18" in lines
    assert any(line.startswith("  gpu004 ERROR dcgm:") for line in lines)
    assert "  cluster FAIL fabric: 4-node busbw 120 GB/s, below the 300 GB/s floor" in lines
    assert not any("gpu001" in line for line in lines[1:])
    message = _report.verdict_message(doc)
    assert message.startswith("2 of 3 node(s) failed acceptance: gpu003, gpu004 (1 with a measured fault; 1 not judged "
                              "— tool error: 1); cluster-level problems in fabric")


def test_a_passing_run_says_how_many_nodes_passed():
    doc = document([check("topology", "a", "nvlink", "pass", "ok")], ["a"])
    assert _report.verdict_message(doc) == "all 1 node(s) passed"
    assert _report.summary_lines(doc, "/r")[0].startswith("gpucluster.acceptance verdict: PASS — 0 of 1")
