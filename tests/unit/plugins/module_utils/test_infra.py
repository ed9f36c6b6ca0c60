"""Infrastructure failures told from hardware findings, in the launchers' and tools' own words."""
import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._infra import classify_failure, describe
from ansible_collections.gpucluster.acceptance.plugins.module_utils import _stages
from conftest import FIXTURES


@pytest.mark.parametrize("text, component, node", [
    ("srun: error: Unable to allocate resources: Unable to contact slurm controller (connect failure)", "scheduler", None),
    ("srun: error: Could not establish a configuration source", "scheduler", None),
    ("srun: error: Unable to create step for job 42: Requested node configuration is not available", "scheduler", None),
    ("srun: error: Unable to allocate resources: Required node not available (down, drained or reserved)",
     "scheduler", None),
    ("srun: error: Munge decode failed: Expired credential", "scheduler", None),
    ("ssh: connect to host gpu005 port 22: Connection refused", "transport", "gpu005"),
    ("Host key verification failed.", "transport", None),
    ("acceptance@gpu007: Permission denied (publickey,password).", "transport", None),
    ("kex_exchange_identification: read: Connection reset by peer", "transport", None),
    ("ORTE was unable to reliably start one or more daemons.", "transport", None),
    ("[gpu003:12345] PMIX ERROR: UNREACHABLE in file server/pmix_server.c at line 2795", "launcher", None),
    ("srun: error: Couldn't find the specified plugin name for mpi/pmix_v4 looking at all files", "launcher", None),
    ("*** An error occurred in MPI_Init", "launcher", None),
    ("slurmstepd: error: execve(): all_reduce_perf: No such file or directory", "launcher", None),
    ("all_reduce_perf: error while loading shared libraries: libnccl.so.2: cannot open shared object file", "launcher", None),
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=42.0. Some of the step tasks have been OOM Killed.",
     "launcher", None),
    ("  0: srun: error: Unable to contact slurm controller (connect failure)", "scheduler", None),
    ("There are not enough slots available in the system to satisfy the 16", "launcher", None),
    ("srun: Required node not available (down, drained or reserved)", "scheduler", None),
    ("srun: job 42 queued and waiting for resources", "scheduler", None),
    ("srun: error: Task launch for StepId=42.0 failed on node gpu005: Communication connection failure",
     "launcher", "gpu005"),
])
def test_the_launchers_words_name_the_component(text, component, node):
    found = classify_failure("# nThread 1 nGpus 8\n" + text + "\n")
    assert found["component"] == component
    assert found["node"] == node
    # the tool's own words, without the srun --label prefix
    assert found["message"] == (text[len("  0: "):] if text.startswith("  0: ") else text.strip())
    assert component in describe(found, "all_reduce_perf")


@pytest.mark.parametrize("text", [
    "gpu001:1234:1234 [0] NCCL INFO NET/IB : Got completion from peer 10.0.0.2 with error 12, opcode 0, len 0",
    "gpu001:1234:1234 [0] NCCL WARN socketStartConnect: Connect to 10.0.0.2<41403> failed : Connection refused",
    "# Out of bounds values : 3 FAILED",
    " gpu001 pid 1234: Test failure common.cu:1189",
    "GPU 1 Detected 2 volatile double-bit ECC error(s) in GPU 1.",
    "",
])
def test_findings_about_the_hardware_are_not_infrastructure(text):
    assert classify_failure(text) is None


def test_a_tool_the_launcher_never_started_is_a_launcher_error_not_unreadable_output():
    text = (FIXTURES / "captured" / "a100_nccl_mpirun_not_enough_slots_gcm" / "all_reduce_perf.txt").read_text()
    record = {"output": text, "rc": 0, "seconds": None, "complete": True}
    state = _stages.judge_stage({}, "nccl_single_node", {"tools": {"all_reduce_perf": record}, "replay": True},
                                {"gpus_per_node": 8, "nccl": {"single_node_busbw_min": 200}}, node="n")
    # One launcher error instead of the unreadable-output errors, and the NVLink counters this capture
    # does not hold named as not judged.
    (check, nvlink) = state["last"]["checks"]
    assert (nvlink["check"], nvlink["status"]) == ("nvlink.errors", "skip")
    assert check["status"] == "error" and check["component"] == "launcher"
    assert "There are not enough slots available" in check["message"]
    assert check["evidence"] == ["There are not enough slots available in the system to satisfy the 16"]
