"""judge_stage: tool failures become errors naming the tool, outputs are judged, state accumulates."""
import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _run_state, _stages
from ansible_collections.gpucluster.acceptance.plugins.module_utils._cluster import judge_cluster
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile
from conftest import FIXTURES

A100 = load_profile("a100_sxm_80gb")


def collected(*tools):
    """Collector output for (name, output, rc) triples, as gpucluster-collect.sh prints it."""
    parts = []
    for name, output, rc in tools:
        parts.append("==> gpucluster-begin %s <==\n%s\n\n==> gpucluster-end %s rc=%d seconds=0.100 <==" % (name, output, name, rc))
    return "\n".join(parts) + "\n"


def fixture(path):
    return (FIXTURES / path).read_text()


def test_missing_gpu_fails_topology_and_is_recorded_in_state():
    out = collected(("nvidia-smi-topo", fixture("nvidia_topo/dgx_a100_7of8_gpus_handmade.txt"), 0))
    state = _stages.judge_stage({}, "topology", out, A100, node="gpu007")
    assert state["failed_stages"] == ["topology"]
    assert state["stages"]["topology"]["status"] == "fail"
    failed = [c for c in state["last"]["checks"] if c["status"] == "fail"]
    assert any("7" in c["message"] and "8" in c["message"] for c in failed)
    assert state["last"]["raw"]["nvidia-smi-topo"]["rc"] == 0
    assert state["last"]["node"] == "gpu007"


def test_timed_out_tool_is_an_error_naming_the_tool_and_skips_judging():
    out = collected(("dcgmi-diag", "", 124))
    state = _stages.judge_stage({"failed_stages": [], "stages": {"topology": {"status": "pass", "metrics": {}}}},
                                "dcgm", out, A100, options={"level": 3}, node="gpu003")
    assert state["failed_stages"] == ["dcgm"]
    assert state["stages"]["topology"]["status"] == "pass"  # earlier stages are kept
    (check,) = state["last"]["checks"]
    assert check["status"] == "error" and check["check"] == "collect" and check["component"] == "dcgmi-diag"
    assert "timed out" in check["message"]


def test_missing_tool_section_and_no_markers_are_errors():
    state = _stages.judge_stage({}, "gpu_health", collected(("nvidia-smi-q", "x", 0)), A100, node="n")
    names = sorted(c["component"] for c in state["last"]["checks"])
    assert names == ["dmesg", "node-clock", "nvidia-smi-csv", "xid-window"]
    assert all("no output collected" in c["message"] for c in state["last"]["checks"])
    empty = _stages.judge_stage({}, "topology", "bash: not found\n", A100, node="n")
    assert empty["last"]["checks"][0]["status"] == "error"
    assert empty["failed_stages"] == ["topology"]


def test_garbled_output_is_an_error_never_a_pass():
    out = collected(("nvidia-smi-topo", "\x00\x01garbage\nGPU0 what", 0))
    state = _stages.judge_stage({}, "topology", out, A100, node="n")
    assert state["stages"]["topology"]["status"] == "error"


def test_judge_crash_becomes_an_error(monkeypatch):
    def broken(outputs, profile, options):
        raise KeyError("boom")
    monkeypatch.setitem(_stages.STAGES, "topology", (("nvidia-smi-topo",), broken))
    state = _stages.judge_stage({}, "topology", collected(("nvidia-smi-topo", "x", 0)), A100, node="n")
    assert state["last"]["checks"][0]["status"] == "error"
    assert "KeyError" in state["last"]["checks"][0]["message"]


def test_replayed_dict_input_is_judged_the_same_as_collector_output():
    text = fixture("nvidia_topo/dgx_a100_7of8_gpus_handmade.txt")
    live = _stages.judge_stage({}, "topology", collected(("nvidia-smi-topo", text, 0)), A100, node="n")
    record = {"output": text, "rc": 0, "seconds": 0.1, "complete": True}
    replay = _stages.judge_stage({}, "topology", {"tools": {"nvidia-smi-topo": record}, "replay": True}, A100, node="n")
    assert live["last"]["checks"] == replay["last"]["checks"]


def test_replay_judges_what_was_captured_and_skips_a_stage_with_nothing():
    text = fixture("nvidia_topo/dgx_a100_7of8_gpus_handmade.txt")
    record = {"output": text, "rc": 0, "seconds": None, "complete": True}
    nothing = _stages.judge_stage({}, "dcgm", {"tools": {"nvidia-smi-topo": record}, "replay": True}, A100, node="n")
    assert [c["status"] for c in nothing["last"]["checks"]] == ["skip"]
    assert "not in the replayed set" in nothing["last"]["checks"][0]["message"]
    assert nothing["failed_stages"] == []
    # Live, the same missing output is an error: the collector must have printed it.
    live = _stages.judge_stage({}, "dcgm", {"tools": {"nvidia-smi-topo": record}}, A100, node="n")
    assert live["stages"]["dcgm"]["status"] == "error"


def test_unknown_stage_is_refused():
    with pytest.raises(ValueError, match="unknown stage"):
        _stages.judge_stage({}, "fabric-typo", "", A100)


def test_preflight_records_versions_and_flags_missing_tools():
    csv = fixture("nvidia_smi/csv_h100_8gpu_units_handmade.csv")
    out = collected(("tools", "/usr/bin/nvidia-smi\n/usr/bin/ibstat", 1),
                    ("nvidia-smi-versions", csv, 0),
                    ("nvidia-smi-list", fixture("nvidia_smi/list_h100_8gpu_handmade.txt"), 0),
                    ("dcgmi-version", "Version : 3.3.6\nBuild ID : 14", 0),
                    ("ibstat-versions", fixture("ibstat/gpud_h100_ib_active_bond_spaces.txt"), 0))
    state = _stages.judge_stage({}, "preflight", out, A100, options={"required_tools": ["nvidia-smi", "dcgmi", "ibstat"]},
                                node="gpu001")
    missing = [c for c in state["last"]["checks"] if c["check"] == "tool_present" and c["status"] == "fail"]
    assert [c["component"] for c in missing] == ["dcgmi"]
    assert state["stages"]["preflight"]["metrics"]["dcgm_version"] == "3.3.6"


def states_with(field_values, stage="preflight", key="driver_version"):
    return dict((node, {"failed_stages": [], "stages": {stage: {"status": "pass", "metrics": {key: value}}}})
                for node, value in field_values.items())


def test_cluster_uniformity_fails_the_odd_node_out():
    values = dict(("gpu%03d" % i, "550.90.07") for i in range(1, 16))
    values["gpu007"] = "535.129.03"
    results = judge_cluster(states_with(values), A100)
    (driver,) = [r for r in results if any(c["check"] == "uniform_driver_version" for c in r["checks"])]
    assert driver["failed_nodes"] == ["gpu007"]
    bad = [c for c in driver["checks"] if c["status"] == "fail"]
    assert bad[0]["node"] == "gpu007" and "535.129.03" in bad[0]["message"]


def test_cluster_peer_check_fails_a_slow_node_above_the_floor():
    values = dict(("gpu%03d" % i, 240.0 + (i % 3)) for i in range(1, 17))
    values["gpu012"] = 205.0  # above the A100 floor of 200, 15 % below the others
    results = judge_cluster(states_with(values, "nccl_single_node", "busbw"), A100)
    (peers,) = results
    assert peers["stage"] == "nccl_single_node" and peers["failed_nodes"] == ["gpu012"]


def test_nodes_that_never_reported_are_left_to_the_verdict():
    assert judge_cluster({"gpu001": None, "gpu002": None}, A100) == []


def test_a_state_from_another_run_is_dropped_and_the_new_one_carries_this_run():
    old = _stages.judge_stage({}, "topology", collected(("nvidia-smi-topo", "garbled", 0)), A100, node="n", run_id="r1")
    assert old["run_id"] == "r1" and old["failed_stages"] == ["topology"]
    clean = collected(("nvidia-smi-topo", fixture("nvidia_topo/dgx_a100_8gpu_10nic_tabs_legend.txt"), 0))
    same_run = _stages.judge_stage(old, "topology", clean, A100, node="n", run_id="r1")
    assert same_run["failed_stages"] == ["topology"]  # a failure in this run stays
    next_run = _stages.judge_stage(old, "topology", clean, A100, node="n", run_id="r2")
    assert next_run["run_id"] == "r2" and next_run["failed_stages"] == [] and list(next_run["stages"]) == ["topology"]
    no_id = _stages.judge_stage(old, "topology", clean, A100, node="n")
    assert no_id["failed_stages"] == ["topology"] and no_id["run_id"] == "r1"  # without an id, any state counts


def test_state_of_run_accepts_only_this_runs_dicts():
    assert _run_state.state_of_run({"run_id": "a", "stages": {}}, "a") == {"run_id": "a", "stages": {}}
    assert _run_state.state_of_run({"run_id": "a"}, "b") == {}
    assert _run_state.state_of_run({"stages": {}}, "b") == {}
    assert _run_state.state_of_run({"stages": {}}, "") == {"stages": {}}
    assert _run_state.state_of_run(None, "") == {} and _run_state.state_of_run("x", "a") == {}


def test_a_collector_that_did_not_start_says_why_in_each_missing_tool():
    why = {"tools": {}, "errors": ["the collector exited with status 3 and printed nothing: bash: not found"]}
    state = _stages.judge_stage({}, "gpu_health", why, A100, node="n")
    assert len(state["last"]["checks"]) == 5   # one per tool of the stage
    assert all(c["message"].endswith("no output collected (%s)" % why["errors"][0]) for c in state["last"]["checks"])


def test_dcgmi_version_is_judged_and_a_host_engine_of_another_version_fails():
    text = fixture("captured/p100_dcgmi_version_470_dcgm314/dcgmi-version.txt")
    record = {"output": text, "rc": 0, "seconds": None, "complete": True}
    state = _stages.judge_stage({}, "preflight", {"tools": {"dcgmi-version": record}, "replay": True}, A100, node="n")
    (dcgm,) = [c for c in state["last"]["checks"] if c["check"] == "dcgm_version"]
    assert dcgm["status"] == "pass" and dcgm["message"] == "DCGM 4.7.0 (host engine 4.7.0)"
    assert state["stages"]["preflight"]["metrics"]["dcgm_version"] == "4.7.0"
    older = text.replace("Hostengine build info:\nVersion : 4.7.0", "Hostengine build info:\nVersion : 3.3.9")
    state = _stages.judge_stage({}, "preflight", {"tools": {"dcgmi-version": dict(record, output=older)},
                                                  "replay": True}, A100, node="n")
    (dcgm,) = [c for c in state["last"]["checks"] if c["check"] == "dcgm_version"]
    assert dcgm["status"] == "fail" and "talks to a DCGM host engine 3.3.9" in dcgm["message"]
    assert dcgm["evidence"] == ["Version : 4.7.0", "Version : 3.3.9"]


def test_an_optional_tool_not_collected_or_not_installed_is_a_skip_never_an_error():
    """imex-status is collected on rack profiles only, and a tray may not have nvidia-imex-ctl."""
    gb200 = load_profile("gb200_nvl72_tray")
    q_text = fixture("nvidia_smi/q_h100_sxm_8gpu_565.txt")
    base = [("nvidia-smi-q", q_text, 0), ("nvidia-smi-csv", "index\n", 0), ("dmesg", "", 0),
            ("node-clock", "now: 2026-12-05T10:00:00.000000000Z\ntz: +0000\nuptime: 100.0 50.0", 0),
            ("xid-window", "xid_since: boot\nwindow: boot\nlast_pass_run: ", 0), ("nvlink-status", "", 0)]
    for extra in ([], [("imex-status", "sh: 1: nvidia-imex-ctl: not found", 127)]):
        state = _stages.judge_stage({}, "gpu_health", collected(*(base + extra)), gb200, node="n")
        checks = state["last"]["checks"]
        assert not [c for c in checks if c.get("tool") == "imex-status" and c["status"] in ("fail", "error")]
        (imex,) = [c for c in checks if c["check"] == "gpu.imex"]
        assert imex["status"] == "skip" and "not collected or is not installed" in imex["message"]
    text = fixture("imex/imex_ctl_n_18_nodes_up_aws.txt")
    state = _stages.judge_stage({}, "gpu_health", collected(*(base + [("imex-status", text, 0)])), gb200, node="n")
    (imex,) = [c for c in state["last"]["checks"] if c["check"] == "gpu.imex"]
    assert imex["status"] == "pass" and state["stages"]["gpu_health"]["metrics"]["imex"]["state"] == "UP"


def test_nvbandwidth_on_a_rack_profile_is_judged_when_collected_and_a_skip_when_not():
    gb200 = load_profile("gb200_nvl72_tray")
    nccl = fixture("nccl_tests/" + sorted(p.name for p in (FIXTURES / "nccl_tests").glob("*.txt"))[0])
    base = [("nvlink-errors-before", "", 0), ("all_reduce_perf", nccl, 0), ("nvlink-errors-after", "", 0)]
    state = _stages.judge_stage({}, "nccl_single_node", collected(*base), gb200, node="n")
    (skip,) = [c for c in state["last"]["checks"] if c["check"] == "nvlink.bandwidth"]
    assert skip["status"] == "skip" and not [c for c in state["last"]["checks"] if c.get("tool") == "nvbandwidth"
                                             and c["status"] == "error"]
    text = fixture("nvbandwidth/nvbandwidth_v07_a100_d2d_assert_issue34.txt")
    state = _stages.judge_stage({}, "nccl_single_node", collected(*(base + [("nvbandwidth", text, 1)])), gb200, node="n")
    (error,) = [c for c in state["last"]["checks"] if c["check"] == "nvlink.bandwidth"]
    assert error["status"] == "error" and "did not finish" in error["message"]
