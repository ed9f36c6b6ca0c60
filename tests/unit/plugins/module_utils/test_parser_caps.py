"""Every tool parser has a size cap: above it, an error naming the size, at once (module_utils/_text.capped).

The parsers are found by their cap (parse_* functions of module_utils carrying limit_mb): a parser
without one is listed by name, so a new one cannot be forgotten.
"""
import importlib
import time

import pytest

from conftest import REPO

PACKAGE = "ansible_collections.gpucluster.acceptance.plugins.module_utils."
# Parsers of tool output (text in, a result with errors out) that must carry a cap.
TOOL_PARSERS = {
    "_nvidia_smi": "parse_nvidia_smi_q", "_nvidia_smi_csv": "parse_nvidia_smi_csv",
    "_nvidia_smi_list": "parse_nvidia_smi_list", "_nvidia_topo": "parse_nvidia_topo",
    "_nvlink_errors": "parse_nvlink_errors", "_dcgm_diag": "parse_dcgm_diag", "_ibstat": "parse_ibstat",
    "_ib_counters": "parse_ib_counters", "_ibnetdiscover": "parse_ibnetdiscover", "_nccl_tests": "parse_nccl_tests",
    "_perftest": "parse_perftest", "_xid_log": "parse_xid_log", "_slurm_topology": "parse_slurm_topology",
    "_sacct": "parse_sacct", "_workload_log": "parse_workload_log", "_sdc_probe": "parse_sdc_probe",
    "_judge_loader": "parse_loader_probe", "_checkpoint_probe": "parse_checkpoint_probe",
    "_sections": "parse_sections",
}


def _capped_parsers():
    found = {}
    for path in sorted((REPO / "plugins" / "module_utils").glob("_*.py")):
        module = importlib.import_module(PACKAGE + path.stem)
        for name in dir(module):
            function = getattr(module, name)
            if name.startswith("parse_") and callable(function) and getattr(function, "__module__", "") == module.__name__:
                found["%s.%s" % (path.stem, name)] = function
    return found


ALL = _capped_parsers()


def test_every_tool_parser_carries_a_cap():
    missing = ["%s.%s" % (m, f) for m, f in sorted(TOOL_PARSERS.items()) if not hasattr(ALL["%s.%s" % (m, f)], "limit_mb")]
    assert missing == []


@pytest.mark.parametrize("name", sorted("%s.%s" % item for item in TOOL_PARSERS.items()))
def test_above_its_cap_a_parser_answers_at_once_with_the_size(name):
    parser = ALL[name]
    text = "x\n" * (int(parser.limit_mb * 1000 * 1000) // 2 + 1)
    started = time.process_time()
    result = parser(text)
    assert time.process_time() - started < 2.0
    assert result["errors"][0] == ("the output is %.1f MB, above the %g MB this parser reads: not parsed (a capture "
                                   "gone wrong?)" % (len(text) / 1e6, parser.limit_mb))


def test_at_its_cap_a_parser_still_reads():
    parser = ALL["_nvlink_errors.parse_nvlink_errors"]
    result = parser("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n Link 0: Replay Errors: 0\n")
    assert result["errors"] == [] and result["gpus"][0]["links"][0] == {"replay_errors": 0}
