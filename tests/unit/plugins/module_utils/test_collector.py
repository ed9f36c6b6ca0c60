"""The collector command line: every inventory value quoted on its own, bad definitions refused."""
import shlex
import subprocess

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils._collector import collector_command
from ansible_collections.gpucluster.acceptance.plugins.module_utils._sections import parse_sections
from conftest import REPO

SCRIPT = (REPO / "roles" / "collect" / "files" / "gpucluster-collect.sh").read_text()


def run(command):
    return subprocess.run(command, shell=True, capture_output=True, text=True, timeout=60, check=False).stdout


@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                        min_size=1, max_size=20).filter(lambda a: a not in ("@tool", "@sleep")),
                min_size=1, max_size=4))
def test_any_argument_reaches_the_tool_verbatim(args):
    command = collector_command([{"name": "t", "timeout": 5, "argv": ["printf", "%s\\n"] + args}], SCRIPT)
    words = shlex.split(command)
    assert words[-len(args):] == args  # one shell word per argument, nothing split or merged


def test_hostile_values_run_as_data(tmp_path):
    marker = tmp_path / "pwned"
    hostile = "$(touch %s)`touch %s`; touch %s" % (marker, marker, marker)
    command = collector_command([{"name": "t", "timeout": 5, "argv": ["echo", hostile]}], SCRIPT,
                                environment={"GPU_NOTE": hostile})
    out = parse_sections(run(command))
    assert out["tools"]["t"]["output"] == hostile
    assert not marker.exists()


def test_environment_reaches_the_tools():
    command = collector_command([{"name": "env", "timeout": 5, "argv": ["sh", "-c", 'echo "$SIM_NODE"']}],
                                SCRIPT, environment={"SIM_NODE": "gpu 007"})
    assert parse_sections(run(command))["tools"]["env"]["output"] == "gpu 007"


@pytest.mark.parametrize("tool, message", [
    ({"name": "a b", "timeout": 5, "argv": ["x"]}, "tool name"),
    # "$" would accept the name before a final newline: the collector's markers would break
    ({"name": "a\n", "timeout": 5, "argv": ["x"]}, "tool name"),
    ({"name": "a", "timeout": 0, "argv": ["x"]}, "timeout 0 is below 1"),
    ({"name": "a", "timeout": "soon", "argv": ["x"]}, "timeout 'soon' is not a number"),
    ({"name": "a", "timeout": float("inf"), "argv": ["x"]}, "timeout inf is not a finite number"),
    ({"name": "a", "timeout": "1e30", "argv": ["x"]}, "timeout '1e30' is above 604800"),
    ({"name": "a", "timeout": True, "argv": ["x"]}, "timeout True is not a number"),
    ({"name": "a", "timeout": "\u0663", "argv": ["x"]}, "is not a number"),
    ({"name": "a", "timeout": 2.5, "argv": ["x"]}, "timeout 2.5 is not a whole number"),
    ({"name": "a", "timeout": 5, "argv": ["x"], "pause_before": "inf"}, "pause_before 'inf' is not a number"),
    ({"name": "a", "timeout": 5, "argv": ["x"], "pause_before": float("nan")}, "pause_before nan is not a finite"),
    ({"name": "a", "timeout": 5, "argv": []}, "non-empty list"),
    ({"name": "a", "timeout": 5, "argv": ["x", "@tool"]}, "markers"),
    ("nvidia-smi", "must be a dict"),
])
def test_bad_tool_definitions_are_refused(tool, message):
    with pytest.raises(ValueError, match=message):
        collector_command([tool], SCRIPT)


def test_bad_environment_name_is_refused():
    with pytest.raises(ValueError, match="not valid"):
        collector_command([{"name": "a", "timeout": 5, "argv": ["x"]}], SCRIPT, environment={"A;B": "1"})
    with pytest.raises(ValueError, match="not valid"):
        collector_command([{"name": "a", "timeout": 5, "argv": ["x"]}], SCRIPT, environment={"A\n": "1"})


def test_node_token_is_the_inventory_name_over_ssh_and_left_for_the_node_under_srun():
    from ansible_collections.gpucluster.acceptance.plugins.module_utils._collector import collector_argv
    tools = [{"name": "t", "timeout": 5, "argv": ["ls", "/scratch/@node@/x"]}]
    ssh = collector_argv(tools, SCRIPT, {"SIM_NODE": "@node@"}, node="gpu007")
    assert "/scratch/gpu007/x" in ssh and "SIM_NODE=gpu007" in ssh
    srun = collector_argv(tools, SCRIPT, {"SIM_NODE": "@node@"})
    assert "/scratch/@node@/x" in srun and "SIM_NODE=@node@" in srun
    assert shlex.split(collector_command(tools, SCRIPT, node="gpu007"))[-1] == "/scratch/gpu007/x"
