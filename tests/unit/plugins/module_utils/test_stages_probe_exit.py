"""A probe that did not finish never passes: its exit status, its last words, whatever it printed.

The collection's probes (SDC, data loader, checkpoint) exit 0 when they ran to their end, whatever
they found; any other exit is their own failure (a Python exception, CUDA out of memory, a signal).
"""
import string

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpucluster.acceptance.plugins.module_utils import _stages
from ansible_collections.gpucluster.acceptance.plugins.plugin_utils._profiles import load_profile
from conftest import FIXTURES

H100 = load_profile("hgx_h100_sxm")
# stage -> (tool, a complete output of that probe from a simulated node that passes it)
PROBE_STAGES = {
    "sdc": ("sdc-probe", FIXTURES / "sdc" / "gpu004.jsonl"),
    "data_loader_alone": ("loader-probe-alone", FIXTURES / "loader" / "gpu001.jsonl"),
    "data_loader": ("loader-probe", FIXTURES / "loader" / "gpu001.jsonl"),
    "checkpoint_alone": ("checkpoint-probe-alone", FIXTURES / "checkpoint" / "gpu001.jsonl"),
    "checkpoint": ("checkpoint-probe", FIXTURES / "checkpoint" / "gpu001.jsonl"),
}
OOM = ("Traceback (most recent call last):\n"
       '  File "<string>", line 500, in <module>\n'
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
       "of 79.10 GiB of which 1.06 GiB is free.")


def judge(stage, output, rc):
    tool = PROBE_STAGES[stage][0]
    collected = {"tools": {tool: {"output": output, "rc": rc, "seconds": 1.5, "complete": True}}, "errors": []}
    state = _stages.judge_stage({}, stage, collected, H100, {"min_iterations": 1}, node="gpu002", run_id="r1")
    return state["stages"][stage]["status"], state["last"]["checks"]


def test_every_probe_stage_is_in_the_registry():
    assert sorted(PROBE_STAGES) == sorted(s for s, (tools, _j) in _stages.STAGES.items()
                                          if set(tools) & set(_stages.PROBES))
    assert sorted(t for t, _p in PROBE_STAGES.values()) == sorted(_stages.PROBES)


@pytest.mark.parametrize("stage", sorted(PROBE_STAGES))
def test_complete_output_passes_with_exit_0(stage):
    status, checks = judge(stage, PROBE_STAGES[stage][1].read_text(), 0)
    assert status == "pass", [(c["check"], c["message"]) for c in checks if c["status"] != "pass"]


@pytest.mark.parametrize("stage", sorted(PROBE_STAGES))
def test_crash_before_the_header_is_an_error_in_the_probes_own_words(stage):
    tool = PROBE_STAGES[stage][0]
    status, checks = judge(stage, OOM, 1)
    assert status == "error"
    errors = [c for c in checks if c["status"] == "error"]
    exit_error = [c for c in errors if c["check"] == "collect"]
    assert len(exit_error) == 1 and exit_error[0]["component"] == "probe"
    assert exit_error[0]["message"].startswith("%s exited with status 1: the probe did not finish" % tool)
    assert "torch.OutOfMemoryError: CUDA out of memory" in exit_error[0]["message"]
    header = [c for c in errors if c["check"].endswith(".parse")]
    assert header and "printed no header record" in header[0]["message"]
    assert "line 3: torch.OutOfMemoryError" in header[0]["message"]
    assert all(c["node"] == "gpu002" and c["stage"] == stage for c in checks)


@pytest.mark.parametrize("stage", sorted(PROBE_STAGES))
def test_traceback_without_header_is_an_error_even_with_exit_0(stage):
    status, checks = judge(stage, OOM, 0)
    assert status == "error"
    assert any("printed no header record" in c["message"] and "CUDA out of memory" in c["message"]
               for c in checks if c["status"] == "error")


@pytest.mark.parametrize("stage", sorted(PROBE_STAGES))
def test_signal_after_a_complete_output_is_still_an_error(stage):
    """Everything printed, then a segfault at exit (a CUDA context torn down): not a pass."""
    text = PROBE_STAGES[stage][1].read_text() + "\nbash: line 1: 4242 Segmentation fault (core dumped)"
    status, checks = judge(stage, text, 139)
    assert status == "error"
    (error,) = [c for c in checks if c["check"] == "collect"]
    assert "was killed by signal 11 (SIGSEGV)" in error["message"]
    assert error["message"].endswith("Segmentation fault (core dumped)")


def test_silent_signal_names_the_signal():
    status, checks = judge("sdc", "", 134)
    assert status == "error"
    assert checks[0]["message"] == "sdc-probe: was killed by signal 6 (SIGABRT) and printed nothing"


@pytest.mark.parametrize("rc, text", [(1, "exited with status 1"), (3, "exited with status 3"),
                                      (139, "was killed by signal 11 (SIGSEGV)"), (-9, "was killed by signal 9 (SIGKILL)"),
                                      (255, "exited with status 255"), (159, "was killed by signal 31 (SIGSYS)")])
def test_exit_status_text(rc, text):
    assert _stages.exit_status_text(rc) == text


LINES = st.one_of(
    st.text(alphabet=string.printable, max_size=80),
    st.sampled_from(['{"record": "header"}', '{"record": "done", "iterations": 3, "seconds": 1.0}',
                     '{"record": "result"', "Segmentation fault", "Killed"]))


@given(stage=st.sampled_from(sorted(PROBE_STAGES)), lines=st.lists(LINES, max_size=6),
       rc=st.integers(-64, 255).filter(lambda rc: rc not in (0, 124, 127, 137)), keep=st.booleans())
def test_no_output_with_a_non_zero_exit_passes(stage, lines, rc, keep):
    """Property: whatever a probe printed (its real complete output included), a non-zero exit is
    never a pass and never a traceback out of the judge."""
    text = (PROBE_STAGES[stage][1].read_text() if keep else "") + "\n".join(lines)
    status, checks = judge(stage, text, rc)
    assert status == "error", [(c["check"], c["status"], c["message"]) for c in checks]
    assert not any(c["check"] == "judge" for c in checks)  # no judge exception


@given(stage=st.sampled_from(sorted(PROBE_STAGES)), lines=st.lists(LINES, max_size=6))
def test_no_output_without_a_header_passes(stage, lines):
    """Property: without the probe's header record nothing was tested, whatever the exit status."""
    text = "\n".join(line for line in lines if '"header"' not in line)
    status, _checks = judge(stage, text, 0)
    assert status == "error"
