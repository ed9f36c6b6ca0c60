# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpusim: the fake GPU/InfiniBand tools of the simulated cluster.

``sim/bin/<tool>`` wrappers run ``sim/bin/gpusim <tool> ARGS``; this package renders what the real
tool would print for the node named by $SLURMD_NODENAME (or $GPUCLUSTER_SIM_NODE) of the cluster
spec in $GPUCLUSTER_SIM_SPEC, with the spec's faults applied. See docs/simulated-cluster-tools.md.

Modules: hardware (per-profile facts), spec (load + validate), model (per-node state after
faults), fabric (bus bandwidth model), runstate (counters kept in $GPUCLUSTER_SIM_RUN), one
renderer per tool (nvidia_smi, dcgmi, ibstat, perfquery, ibnetdiscover, dmesg, nccl_tests), cli.
Standard library only, plus PyYAML for YAML specs.
"""
