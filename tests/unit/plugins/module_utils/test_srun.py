"""The srun transport's step: its prelude run by real bash, its --label output split per node."""
import subprocess

from hypothesis import given, settings, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _srun
from ansible_collections.gpucluster.acceptance.plugins.module_utils._collector import collector_argv
from ansible_collections.gpucluster.acceptance.plugins.module_utils._sections import parse_sections
from conftest import REPO

SCRIPT = (REPO / "roles" / "collect" / "files" / "gpucluster-collect.sh").read_text()


def task_output(node, argv, env=None):
    """What one task of the step prints: the prelude run by bash, as slurmstepd would start it."""
    environment = {"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": node, "SLURM_NTASKS": "16", "SLURM_PROCID": "3",
                   "PMI_RANK": "3", "PMIX_RANK": "3", "OMPI_COMM_WORLD_SIZE": "16", "SLURM_JOB_ID": "42"}
    environment.update(env or {})
    proc = subprocess.run(["bash", "-c", _srun.PRELUDE, "gpucluster-srun"] + list(argv), env=environment,
                          capture_output=True, timeout=60, check=False)
    return proc.stdout.decode("utf-8", "replace")


def labelled(task_id, text, width=2):
    """srun --label's rendering of one task's output (srun cuts no line here; see the test below)."""
    return "".join("%*d: %s\n" % (width, task_id, line) for line in text.splitlines())


def test_the_step_output_splits_into_each_nodes_collector_output():
    script = 'echo "node=$1 sim=$SIM_NODE"; env | sort'
    tools = [{"name": "who", "timeout": 10, "argv": ["sh", "-c", script, "sh", "/data/@node@/x"]}]
    argv = collector_argv(tools, SCRIPT, {"SIM_NODE": "@node@"})
    # Interleaved lines of two tasks, as srun prints them, plus srun's own message.
    a, b = labelled(0, task_output("gpu007", argv)), labelled(1, task_output("gpu002", argv))
    mixed = "".join(x + y for x, y in zip(a.splitlines(True), b.splitlines(True)))
    mixed += "".join(a.splitlines(True)[len(b.splitlines()):]) + "".join(b.splitlines(True)[len(a.splitlines()):])
    mixed += "srun: error: gpu009: task 2: Exited with exit code 1\n"
    by_node, headless, own = _srun.node_outputs(mixed)
    assert sorted(by_node) == ["gpu002", "gpu007"] and not headless
    assert own == ["srun: error: gpu009: task 2: Exited with exit code 1"]
    sections = parse_sections(by_node["gpu007"])
    output = sections["tools"]["who"]["output"]
    assert "node=/data/gpu007/x sim=gpu007" in output  # @node@ made the node's Slurm name, argv and env
    assert sections["tools"]["who"]["rc"] == 0
    # The step's identity is gone: an MPI-built tool must not join the step's 16 tasks.
    for name in ("SLURM_NTASKS", "SLURM_PROCID", "PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_JOB_ID"):
        assert name + "=" not in output
    assert "SLURMD_NODENAME=gpu007" in output


@settings(max_examples=25, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=300),
       st.integers(min_value=0, max_value=6000))
def test_any_output_survives_the_label_round_trip_byte_for_byte(text, long_line):
    # A line longer than srun's I/O buffer is cut into labelled pieces: base64's short lines are
    # what srun carries, so the tool's lines come back whole.
    payload = text + "\n" + "x" * long_line
    argv = ["printf", "%s", payload]
    by_node, headless, _own = _srun.node_outputs(labelled(12, task_output("gpu001", argv), width=4))
    assert not headless
    assert by_node["gpu001"] == payload.encode("utf-8").decode("utf-8", "replace")


def test_a_task_without_a_header_is_never_given_to_a_node():
    by_node, headless, own = _srun.node_outputs(" 0: bash: line 1: base64: command not found\n"
                                                "srun: error: task 0 launch failed\n")
    assert by_node == {} and list(headless) == [0]
    assert _srun.srun_failure_summary(own) == "srun: error: task 0 launch failed"


def test_a_cut_off_tail_is_dropped_not_fatal():
    out = task_output("gpu003", ["printf", "%s", "hello world, this is long enough to span blocks" * 3])
    lines = out.splitlines()
    cut = labelled(0, "\n".join(lines[:-1] + [lines[-1][:-3]]))
    by_node, headless, _own = _srun.node_outputs(cut)
    assert not headless and by_node["gpu003"].startswith("hello world")


def test_srun_argv_one_task_per_node_and_options_as_words():
    argv = _srun.srun_argv(["gpu001", "gpu002"], ["env", "A=1", "bash"], "gpucluster-topology",
                           ["--partition", "gpu; rm -rf /"], gpus_per_node=8)
    assert argv[:8] == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--nodelist=gpu001,gpu002",
                        "--label", "--kill-on-bad-exit=0", "--no-kill"]
    assert "--gpus-per-node=8" in argv and "gpu; rm -rf /" in argv  # one argument, no shell
    assert argv[-3:] == ["env", "A=1", "bash"]
    assert "--gpus-per-node=0" not in _srun.srun_argv(["n1"], ["true"], "j", gpus_per_node=0)


def test_slurm_states_and_which_nodes_a_step_can_use():
    states = _srun.parse_sinfo_states("gpu001|idle\ngpu002|down*\ngpu003|drained\ngpu001|allocated\n"
                                      "gpu004|mixed\ngpu005|idle~\ngpu006|unknown*\n\ngarbage\n")
    assert states == {"gpu001": "idle", "gpu002": "down*", "gpu003": "drained", "gpu004": "mixed",
                      "gpu005": "idle~", "gpu006": "unknown*"}
    assert _srun.unusable_reason(states["gpu001"]) is None
    assert _srun.unusable_reason(states["gpu004"]) is None
    assert "not responding" in _srun.unusable_reason(states["gpu002"])
    assert _srun.unusable_reason(states["gpu003"]) == "Slurm reports it drained"
    assert _srun.unusable_reason(None) == "Slurm does not know the node"


def test_a_node_name_with_an_ampersand_is_put_in_whole():
    """bash 5.2's patsub_replacement turns an unquoted '&' in ${a//pat/rep} into the matched text:
    the prelude quotes the name, so 'gp&u' reaches the tool as 'gp&u', not 'gp@node@u'."""
    out = task_output("gp&u", ["sh", "-c", 'printf "%s\\n" "$1"', "sh", "/data/@node@/x"])
    lines = out.splitlines()
    assert lines[0] == "==> gpucluster-node gp&u <=="
    import base64
    assert base64.b64decode("".join(lines[1:])).decode() == "/data/gp&u/x\n"
