"""workload_consume_rates over a real demo run's results.json."""
import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.acceptance.plugins.filter.workload_consume_rates import workload_consume_rates

from conftest import FIXTURES


def test_rate_per_node_from_the_median_step_time():
    document = json.loads((FIXTURES / "report" / "demo_run" / "results.json").read_text())
    rates = workload_consume_rates(document, 32)
    rows = document["workload"]["ranks"]
    assert set(rates) == set(r["node"] for r in rows)
    first = rows[0]
    assert rates[first["node"]] == round(sum(32 / (r["step_p50_ms"] / 1000.0) for r in rows if r["node"] == first["node"]), 2)


def test_no_workload_or_bad_batch_is_an_error():
    with pytest.raises(AnsibleFilterError, match="no workload.ranks"):
        workload_consume_rates({"checks": []}, 32)
    with pytest.raises(AnsibleFilterError, match="> 0"):
        workload_consume_rates({"workload": {"ranks": [{"node": "a", "step_p50_ms": 10}]}}, 0)
