"""gpu.fabric: the NVLink fabric registration of every GPU, from real -q captures and excerpts."""
import re

from hypothesis import given, settings, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_gpu_health import (
    judge_gpu_health_stage)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nvlink_fabric import (
    domain_of, fabric_of_csv, judge_fabric, parse_fabric_blocks)
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile
from conftest import FIXTURES

H100 = load_profile("hgx_h100_sxm")
GB200 = load_profile("gb200_nvl72_tray")
A100 = load_profile("a100_sxm_80gb")
Q_565 = (FIXTURES / "nvidia_smi" / "q_h100_sxm_8gpu_565.txt").read_text()
# A real H100 -q from driver 590: the R580+ layout, its key column 47 wide.
Q_590_WIDE = (FIXTURES / "captured" / "h100_1gpu_590_load_exporter" / "nvidia-smi-q.txt").read_text()
Q_RTX3090 = (FIXTURES / "nvidia_smi" / "q_rtx3090_2gpu_ecc_na_560.txt").read_text()


def stage(q_text, profile, csv=None):
    outputs = {"nvidia-smi-q": q_text, "nvidia-smi-csv": csv, "dmesg": None, "node-clock": None, "xid-window": None}
    checks, metrics = judge_gpu_health_stage(outputs, profile, {})
    return [c for c in checks if c["check"] == "gpu.fabric"], metrics


def set_state(text, gpu, state=None, status=None):
    """The capture with the gpu-th (0-based) Fabric section's State and/or Status replaced."""
    sections = text.split("    Fabric\n")
    head, rest = sections[gpu + 1].split("\n", 2)[:2], sections[gpu + 1].split("\n", 2)[2]
    if state is not None:
        head[0] = re.sub(r": .*$", lambda _m: ": " + state, head[0])
    if status is not None:
        head[1] = re.sub(r": .*$", lambda _m: ": " + status, head[1])
    sections[gpu + 1] = "\n".join(head + [rest])
    return "    Fabric\n".join(sections)


def test_a_healthy_hgx_h100_passes_and_says_what_it_proved():
    (check,), metrics = stage(Q_565, H100)
    assert check["status"] == "pass" and check["message"] == "all 8 GPUs: fabric State Completed, Status Success"
    assert "Fabric > State : Completed" in check["evidence"] and "Fabric > Status : Success" in check["evidence"]
    assert "nvlink_domain" not in metrics  # CliqueId 0: an HGX node is in no multi-node domain


def test_fabric_in_progress_on_one_gpu_fails_naming_it_and_the_fabric_manager():
    """The issue's case: a real H100 -q with one GPU's State In Progress passed gpu_health before."""
    checks, _metrics = stage(set_state(Q_565, 3, state="In Progress"), H100)
    (failed,) = [c for c in checks if c["status"] != "pass"]
    assert failed["status"] == "fail" and failed["component"] == "GPU3"
    assert failed["message"].startswith("GPU3 (00000000:5D:00.0) fabric State is In Progress (Status Success)")
    assert "nvidia-fabricmanager is not running or has not finished" in failed["message"]
    assert "Fabric > State : In Progress" in failed["evidence"]
    assert len(checks) == 1  # the other seven GPUs are not named


def test_the_wide_key_layout_of_r580_drivers_is_read_alike():
    (check,), _metrics = stage(Q_590_WIDE, H100)
    assert check["status"] == "pass" and check["message"].startswith("all 1 GPUs: fabric State Completed")
    (failed,), _metrics = stage(set_state(Q_590_WIDE, 0, status="Insufficient Resources"), H100)
    assert failed["status"] == "fail" and "Status Insufficient Resources" in failed["message"]
    assert "could not register the GPU with the NVSwitches" in failed["message"]


def test_an_hgx_capture_is_not_a_rack_every_gpu_fails_on_its_clique():
    checks, _metrics = stage(Q_565, GB200)
    assert len(checks) == 8 and all(c["status"] == "fail" for c in checks)
    assert all("CliqueId 0: the GPU is in no NVLink clique" in c["message"] for c in checks)
    assert all("ClusterUUID 00000000-0000-0000-0000-000000000000" in c["message"] for c in checks)


def test_a_gpu_that_reports_no_fabric_is_judged_only_where_the_profile_expects_one():
    checks, _metrics = stage(Q_RTX3090, A100)  # Ampere: fabric null in the profile
    assert checks == []
    checks, _metrics = stage(Q_RTX3090, H100)
    assert checks and all(c["status"] == "error" for c in checks)
    assert "reports no fabric State (N/A): its NVLink registration cannot be judged" in checks[0]["message"]


def test_registration_failed_excerpt_without_a_gpu_header_still_fails_the_fabric():
    text = (FIXTURES / "nvidia_smi" / "fabric_excerpt_insufficient_resources_azhpc506.txt").read_text()
    outputs = {"nvidia-smi-q": text, "nvidia-smi-csv": None, "dmesg": None, "node-clock": None, "xid-window": None}
    checks, _metrics = judge_gpu_health_stage(outputs, GB200, {})
    assert any(c["check"] == "gpu.parse" and c["status"] == "error" for c in checks)  # not a whole -q
    (fabric,) = [c for c in checks if c["check"] == "gpu.fabric"]
    assert fabric["status"] == "fail" and fabric["component"] == "fabric section 1"
    assert "Status Insufficient Resources: NVLink registration failed" in fabric["message"]
    assert "Fabric > CliqueId : 0" in fabric["evidence"]


def test_unhealthy_fabric_health_summary_fails_a_registered_gpu():
    blocks = parse_fabric_blocks((FIXTURES / "nvidia_smi" / "fabric_excerpt_unhealthy_grep_dra626.txt").read_text())
    assert [(b["state"], b["status"], b["clique_id"], b["health"]) for b in blocks] == [
        ("Completed", "Success", "2", {"summary": "Unhealthy", "bandwidth": "Full"})]
    views = [{"name": "GPU0", "label": "GPU0", "fabric": blocks[0], "ev": {}}]
    (check,) = judge_fabric(views, GB200)
    assert check["status"] == "fail" and check["message"] == "GPU0 fabric health: health summary: Unhealthy"
    assert domain_of(blocks[0]) == "dc6e40c4-d722-4357-9ba6-5291dd461278.2"


def test_a_tray_split_across_two_cliques_is_one_failure_naming_both():
    def view(i, clique):
        fabric = {"state": "Completed", "status": "Success", "clique_id": clique,
                  "cluster_uuid": "9c6f5af3-53bf-49b5-a436-b66766c413c3", "health": {}, "evidence": []}
        return {"name": "GPU%d" % i, "label": "GPU%d" % i, "fabric": fabric, "ev": {}}
    (check,) = judge_fabric([view(0, "4026"), view(1, "4026"), view(2, "4026"), view(3, "4027")], GB200)
    assert check["status"] == "fail" and "2 different NVLink domains" in check["message"]
    assert "9c6f5af3-53bf-49b5-a436-b66766c413c3.4027: GPU3" in check["message"]


def test_the_csv_fabric_fields_stand_in_when_q_is_missing():
    csv = ("index, pci.bus_id, fabric.state, fabric.status, fabric.cliqueId, fabric.clusterUuid\n"
           "0, 00000008:01:00.0, Completed, Success, 32766, 69abe9b3-39ab-5ecc-8a2f-8acf3b726ffa\n"
           "1, 00000009:01:00.0, In Progress, N/A, 0, 00000000-0000-0000-0000-000000000000\n")
    checks, _metrics = stage(None, GB200, csv=csv)
    (failed,) = checks
    assert failed["component"] == "GPU1" and "fabric State is In Progress" in failed["message"]
    assert failed["evidence"][-1].startswith("1, 00000009:01:00.0, In Progress")
    assert fabric_of_csv({"index": 0, "name": "x"}) is None


def test_a_rack_tray_reports_its_nvlink_domain_in_the_stage_metrics():
    text = Q_565.replace("CliqueId                          : 0", "CliqueId                          : 32766").replace(
        "ClusterUUID                       : 00000000-0000-0000-0000-000000000000",
        "ClusterUUID                       : 69abe9b3-39ab-5ecc-8a2f-8acf3b726ffa")
    (check,), metrics = stage(text, GB200)
    assert check["status"] == "pass" and "in NVLink domain 69abe9b3-39ab-5ecc-8a2f-8acf3b726ffa.32766" in check["message"]
    assert metrics["nvlink_domain"] == "69abe9b3-39ab-5ecc-8a2f-8acf3b726ffa.32766"


@settings(max_examples=200, deadline=None)
@given(gpu=st.integers(0, 7),
       state=st.one_of(st.sampled_from(["Completed", "In Progress", "Not Started", "N/A", "[Not Supported]", ""]),
                       st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=12)),
       status=st.one_of(st.sampled_from(["Success", "Insufficient Resources", "N/A", "Unknown Error"]),
                        st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=12)))
def test_no_state_but_completed_and_success_ever_passes(gpu, state, status):
    """The family: whatever one GPU's State/Status read, only Completed + Success gives a pass."""
    checks, _metrics = stage(set_state(Q_565, gpu, state=state, status=status), H100)
    healthy = state == "Completed" and status == "Success"
    assert checks and all(c["status"] in ("pass", "fail", "error") for c in checks)
    if healthy:
        assert [c["status"] for c in checks] == ["pass"]
    else:
        assert "pass" not in [c["status"] for c in checks]
        assert any(c["component"] == "GPU%d" % gpu for c in checks), checks
