"""gpu.imex: the IMEX domain of a rack-scale tray (nvidia-imex-ctl -N), from a real capture."""
from hypothesis import given, settings, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._imex import imex_summary, judge_imex, parse_imex_status
from conftest import FIXTURES

UP = (FIXTURES / "imex" / "imex_ctl_n_18_nodes_up_aws.txt").read_text()


def degraded():
    """The real capture with node 3's daemon gone: UNAVAILABLE, its row and column I, the domain DEGRADED."""
    lines = []
    for line in UP.splitlines():
        if line.startswith("Node #3 "):
            line = line.replace("READY      ", "UNAVAILABLE")
        elif line.strip().split(" ")[0].isdigit() and "C" in line:
            cells = line.split()
            row = int(cells[0])
            marks = ["I" if row == 3 or col == 3 else c for col, c in enumerate(cells[1:])]
            line = str(row).rjust(8) + "        " + "   ".join(marks)
        lines.append(line.replace("Domain State: UP", "Domain State: DEGRADED"))
    return "\n".join(lines) + "\n"


def test_the_real_18_node_domain_passes_and_says_what_it_proved():
    parsed = parse_imex_status(UP)
    assert parsed["errors"] == [] and len(parsed["nodes"]) == 18 and parsed["domain_state"] == "UP"
    assert parsed["nodes"][10] == {"index": 10, "address": "172.31.54.95", "state": "READY", "version": "570.172"}
    assert set(parsed["matrix"][17].values()) == {"C"} and len(parsed["matrix"]) == 18
    (check,) = judge_imex(parsed)
    assert check["status"] == "pass" and check["message"] == "IMEX domain UP: 18 node(s) READY, every connection C"
    assert check["evidence"][0] == "Domain State: UP"


def test_a_node_whose_daemon_is_gone_is_named_on_each_tray_and_left_to_the_domain_to_fail():
    """One stopped daemon degrades the domain for every tray: each tray warns, the domain stage fails."""
    (check,) = judge_imex(parse_imex_status(degraded()))
    assert check["status"] == "pass" and check["metrics"]["warning"] and check["component"] == "imex"
    assert check["message"].startswith("warning: IMEX domain of 18 node(s)")
    assert imex_summary(parse_imex_status(degraded())) == {
        "state": "DEGRADED", "nodes": 18, "not_ready": ["#3 172.31.49.228 UNAVAILABLE"], "bad_cells": 35}
    assert "IMEX Domain State DEGRADED; node(s) not READY: #3 172.31.49.228 UNAVAILABLE" in check["message"]
    assert "node 0 -> node 3: I (Invalid)" in check["message"]
    assert "Node #3   - 172.31.49.228   - UNAVAILABLE          - Version: 570.172" in check["evidence"]


def test_cut_off_or_foreign_output_is_an_error_never_a_pass():
    (check,) = judge_imex(parse_imex_status(UP.split("\n Nodes From")[0]))
    assert check["status"] == "error" and "no 'Domain State:' line" in check["message"]
    (check,) = judge_imex(parse_imex_status("nvidia-imex-ctl: cannot connect to the IMEX daemon on this node\n"))
    assert check["status"] == "error"
    assert judge_imex(None) == []


_WORDS = ["Node #0   - 10.0.0.1        - READY                - Version: 570.172", "Domain State: UP", "C", "I",
          "       0        C   C", " Nodes From\\To  0   1", "Nodes:", "READY", "-", "!M!", "x"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=20).map("\n".join))
def test_garbage_made_of_its_words_passes_only_when_it_is_a_whole_up_domain(text):
    parsed = parse_imex_status(text)
    statuses = [c["status"] if not c["metrics"].get("warning") else "warning" for c in judge_imex(parsed)]
    whole = (not parsed["errors"] and parsed["domain_state"] == "UP" and parsed["nodes"]
             and all(n["state"] == "READY" for n in parsed["nodes"])
             and all(set(parsed["matrix"].get(n["index"], {"x": "missing"}).values()) == {"C"} for n in parsed["nodes"]))
    assert statuses and (whole or "pass" not in statuses), (text, statuses)
