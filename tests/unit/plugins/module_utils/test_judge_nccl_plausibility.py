"""plausibility_errors: the implausible values of an nccl-tests run, as sentences (used by the nccl
judges and the fabric stage; the judges' nccl.plausibility check: test_judge_nccl_evidence.py)."""
from ansible_collections.gpucluster.acceptance.plugins.module_utils._judge_nccl_plausibility import (
    plausibility_errors)
from ansible_collections.gpucluster.acceptance.plugins.module_utils._nccl_tests import (
    parse_nccl_tests)

from test_judge_nccl_evidence import H100_2NODE, _text


def test_plausibility_errors_of_foreign_or_empty_input():
    assert plausibility_errors(None, 800) == []
    assert plausibility_errors({"rows": [{"size": 8, "line": 3, "oop": {"busbw": float("inf")}}]},
                               800) == ["line 3 (8 B): out-of-place busbw inf is not a finite "
                                        "number: implausible value"]
    assert plausibility_errors(parse_nccl_tests(_text(H100_2NODE)), 800) == []
    assert plausibility_errors(parse_nccl_tests(_text(H100_2NODE)), None) == []
