"""Unit tests for module_utils/_slurm_node.py: reading scontrol show node, deciding drain/resume.

The REAL_* texts are verbatim output of Slurm 22.05.8 (Debian 12 packages) captured from the
simulated cluster (sim/simcluster.py, nodes n01-n06, n06 without slurmd) with
SLURM_TIME_FORMAT=standard, as the module runs scontrol:
``scontrol --future show node -o`` after a job on n02 (--exclusive) and one on n03 (one CPU), a
drain of n02,n03 and n06, a MAINT reservation on n04 and ``State=FUTURE`` on n05 (REAL_ONELINE);
then n05 drained by an operator and n04 drained by us (REAL_ONELINE_DRAINED); ``scontrol show
node n06`` without -o (REAL_MULTILINE); n06 after SlurmdTimeout (REAL_NOT_RESPONDING) and drained
again (REAL_DOWN_DRAINED).

HANDMADE_* texts are hand-made, in the layout of ``slurm_sprint_node_table`` (Slurm's
src/api/node_info.c: Reason= followed by the optional Comment=, Extra=, ReservationName= lines)
and of the multi-line ``scontrol show node`` shown in public cluster documentation (for example
bihealth/bih-cluster, bih-cluster/docs/help/faq.md, a MIXED+DRAIN node on Slurm 20.02).
"""
import pytest

from ansible_collections.gpucluster.acceptance.plugins.module_utils._slurm_node import (
    DEFAULT_TAG, decide, diff_text, full_reason, is_ours, outcome, parse_node_state,
    parse_scontrol_show_node, summary)

REAL_ONELINE = (
    'NodeName=n01 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=1.12 '
    'AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=vm Version=22.05.8 '
    'OS=Linux 6.18.44-fc-v595 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=23325 Sockets=2 '
    'Boards=1 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu  '
    'BootTime=2026-11-29T20:21:32 SlurmdStartTime=2026-11-29T20:49:52 LastBusyTime=2026-11-29T20:49:52 '
    'CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s '
    'ExtSensorsWatts=0 ExtSensorsTemp=n/s\n'
    'NodeName=n02 Arch=x86_64 CoresPerSocket=1  CPUAlloc=2 CPUEfctv=2 CPUTot=2 CPULoad=1.12 '
    'AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=vm Port=20714 '
    'Version=22.05.8 OS=Linux 6.18.44-fc-v595 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=23324 '
    'Sockets=2 Boards=1 State=ALLOCATED+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A '
    'Partitions=gpu  BootTime=2026-11-29T20:21:32 SlurmdStartTime=2026-11-29T20:49:52 '
    'LastBusyTime=2026-11-29T20:49:52 CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES=cpu=2 CapWatts=n/a '
    'CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=gpucluster: nccl '
    'busbw 310 GB/s below 360 [root@2026-11-29T20:49:55]\n'
    'NodeName=n03 Arch=x86_64 CoresPerSocket=1  CPUAlloc=1 CPUEfctv=2 CPUTot=2 CPULoad=1.12 '
    'AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=vm Port=20715 '
    'Version=22.05.8 OS=Linux 6.18.44-fc-v595 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=23324 '
    'Sockets=2 Boards=1 State=MIXED+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A '
    'Partitions=gpu  BootTime=2026-11-29T20:21:32 SlurmdStartTime=2026-11-29T20:49:52 '
    'LastBusyTime=2026-11-29T20:49:52 CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES=cpu=1 CapWatts=n/a '
    'CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=gpucluster: nccl '
    'busbw 310 GB/s below 360 [root@2026-11-29T20:49:55]\n'
    'NodeName=n04 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=1.12 '
    'AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=vm Port=20716 '
    'Version=22.05.8 OS=Linux 6.18.44-fc-v595 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=23324 '
    'Sockets=2 Boards=1 State=IDLE+MAINTENANCE+RESERVED ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A '
    'MCS_label=N/A Partitions=gpu  BootTime=2026-11-29T20:21:32 SlurmdStartTime=2026-11-29T20:49:52 '
    'LastBusyTime=2026-11-29T20:49:52 CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 '
    'AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n'
    'NodeName=n05 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=1.12 '
    'AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=vm Port=20717 '
    'Version=22.05.8 OS=Linux 6.18.44-fc-v595 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=23324 '
    'Sockets=2 Boards=1 State=FUTURE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu  '
    'BootTime=2026-11-29T20:21:32 SlurmdStartTime=2026-11-29T20:49:52 LastBusyTime=2026-11-29T20:49:52 '
    'CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s '
    'ExtSensorsWatts=0 ExtSensorsTemp=n/s\n'
    'NodeName=n06 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=N/A AvailableFeatures=(null) '
    'ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=vm Port=20718  RealMemory=1000 AllocMem=0 '
    'FreeMem=N/A Sockets=2 Boards=1 State=UNKNOWN+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A '
    'MCS_label=N/A Partitions=gpu  BootTime=None SlurmdStartTime=None LastBusyTime=Unknown '
    'CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s '
    'ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=gpucluster: unreachable [root@2026-11-29T20:49:55]\n'
)

REAL_ONELINE_DRAINED = (
    'NodeName=n04 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=1.12 '
    'AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=vm Port=20716 '
    'Version=22.05.8 OS=Linux 6.18.44-fc-v595 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=23324 '
    'Sockets=2 Boards=1 State=IDLE+DRAIN+MAINTENANCE+RESERVED ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A '
    'MCS_label=N/A Partitions=gpu  BootTime=2026-11-29T20:21:32 SlurmdStartTime=2026-11-29T20:49:52 '
    'LastBusyTime=2026-11-29T20:49:52 CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 '
    'AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=gpucluster: dcgm diag r3 failed '
    '[root@2026-11-29T20:49:57]\n'
    'NodeName=n05 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=1.12 '
    'AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=vm Port=20717 '
    'Version=22.05.8 OS=Linux 6.18.44-fc-v595 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=23324 '
    'Sockets=2 Boards=1 State=FUTURE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A '
    'Partitions=gpu  BootTime=2026-11-29T20:21:32 SlurmdStartTime=2026-11-29T20:49:52 '
    'LastBusyTime=2026-11-29T20:49:52 CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 '
    'AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=operator: PSU swap, ticket 4711 '
    '[root@2026-11-29T20:49:57]\n'
)

REAL_MULTILINE = (
    'NodeName=n06 CoresPerSocket=1 \n'
    '   CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=N/A\n'
    '   AvailableFeatures=(null)\n'
    '   ActiveFeatures=(null)\n'
    '   Gres=(null)\n'
    '   NodeAddr=127.0.0.1 NodeHostName=vm Port=20718 \n'
    '   RealMemory=1000 AllocMem=0 FreeMem=N/A Sockets=2 Boards=1\n'
    '   State=UNKNOWN+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n'
    '   Partitions=gpu \n'
    '   BootTime=None SlurmdStartTime=None\n'
    '   LastBusyTime=Unknown\n'
    '   CfgTRES=cpu=2,mem=1000M,billing=2\n'
    '   AllocTRES=\n'
    '   CapWatts=n/a\n'
    '   CurrentWatts=0 AveWatts=0\n'
    '   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n'
    '   Reason=gpucluster: unreachable [root@2026-11-29T20:49:55]\n'
    '\n'
)

REAL_NOT_RESPONDING = (
    'NodeName=n06 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=N/A AvailableFeatures=(null) '
    'ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=vm Port=20718  RealMemory=1000 AllocMem=0 '
    'FreeMem=N/A Sockets=2 Boards=1 State=DOWN+NOT_RESPONDING ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A '
    'MCS_label=N/A Partitions=gpu  BootTime=None SlurmdStartTime=None LastBusyTime=2026-11-29T20:51:25 '
    'CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s '
    'ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=Not responding [root@2026-11-29T20:52:18]\n'
)

REAL_DOWN_DRAINED = (
    'NodeName=n06 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=N/A AvailableFeatures=(null) '
    'ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=vm Port=20718  RealMemory=1000 AllocMem=0 '
    'FreeMem=N/A Sockets=2 Boards=1 State=DOWN+DRAIN+NOT_RESPONDING ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A '
    'MCS_label=N/A Partitions=gpu  BootTime=None SlurmdStartTime=None LastBusyTime=Unknown '
    'CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s '
    'ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=gpucluster: unreachable [root@2026-11-29T20:50:44]\n'
)

HANDMADE_MULTILINE_MIXED = """\
NodeName=gpu017 Arch=x86_64 CoresPerSocket=56
   CPUAlloc=8 CPUEfctv=224 CPUTot=224 CPULoad=3.10
   AvailableFeatures=h100
   ActiveFeatures=h100
   Gres=gpu:h100:8(S:0-1)
   NodeAddr=gpu017 NodeHostName=gpu017 Version=23.11.4
   OS=Linux 5.15.0-105-generic #115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024
   RealMemory=2000000 AllocMem=64000 FreeMem=1900000 Sockets=2 Boards=1
   State=MIXED+DRAIN ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=gpu
   BootTime=2024-05-01T08:00:00 SlurmdStartTime=2024-05-01T08:01:00
   LastBusyTime=2024-05-02T10:00:00 ResumeAfterTime=None
   CfgTRES=cpu=224,mem=2000000M,billing=224,gres/gpu=8
   AllocTRES=cpu=8,mem=64000M,gres/gpu=1
   CurrentWatts=0 AveWatts=0
   Reason=replace PSU 2 (ticket #8812) [admin@2024-05-02T09:58:11]
   Comment=rack B07
   Extra=site=b

NodeName=gpu018 Arch=x86_64 CoresPerSocket=56
   State=IDLE+DRAIN+MAINTENANCE+RESERVED ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Reason=gpucluster: xid 79 on GPU3 [root@2024-05-02T10:01:00]
   ReservationName=maint_may
"""

HANDMADE_LEGACY = """\
NodeName=old01 State=DRAINED* Reason=gpucluster: ib port down [slurm@2019-01-01T00:00:00]
NodeName=old02 State=IDLE*
NodeName=old03 State=DRAINING
NodeName=old04 State=MAINT
NodeName=old05 State=DOWN$
NodeName=old06 State=ALLOCATED+
"""


def parsed(text):
    result = parse_scontrol_show_node(text)
    assert result["errors"] == [], result["errors"]
    return result["nodes"]


# ----------------------------------------------------------------------------- reading


def test_real_oneline_states_and_reasons():
    nodes = parsed(REAL_ONELINE)
    assert list(nodes) == ["n01", "n02", "n03", "n04", "n05", "n06"]
    assert parse_scontrol_show_node(REAL_ONELINE)["order"] == ["n01", "n02", "n03", "n04", "n05", "n06"]
    assert nodes["n01"]["state"] == "IDLE" and not nodes["n01"]["drained"] and nodes["n01"]["reason"] is None
    assert nodes["n02"]["state"] == "ALLOCATED+DRAIN"
    assert nodes["n02"]["base"] == "ALLOCATED" and nodes["n02"]["drained"] and nodes["n02"]["busy"]
    assert nodes["n02"]["reason"] == "gpucluster: nccl busbw 310 GB/s below 360"
    assert nodes["n02"]["reason_user"] == "root"
    assert nodes["n02"]["reason_time"].startswith("20")
    assert nodes["n03"]["state"] == "MIXED+DRAIN" and nodes["n03"]["busy"]
    assert nodes["n04"]["maintenance"] and nodes["n04"]["reserved"] and not nodes["n04"]["drained"]
    assert nodes["n05"]["future"] and nodes["n05"]["base"] == "FUTURE"
    assert nodes["n06"]["state"] == "UNKNOWN+DRAIN" and nodes["n06"]["reason"] == "gpucluster: unreachable"


def test_real_oneline_drained_future_and_maintenance():
    nodes = parsed(REAL_ONELINE_DRAINED)
    assert nodes["n04"]["flags"] == ["DRAIN", "MAINTENANCE", "RESERVED"]
    assert nodes["n04"]["reason"] == "gpucluster: dcgm diag r3 failed"
    assert nodes["n05"]["state"] == "FUTURE+DRAIN" and nodes["n05"]["future"] and nodes["n05"]["drained"]
    assert nodes["n05"]["reason"] == "operator: PSU swap, ticket 4711"


def test_real_multiline_and_not_responding():
    assert parsed(REAL_MULTILINE)["n06"]["reason"] == "gpucluster: unreachable"
    node = parsed(REAL_NOT_RESPONDING)["n06"]
    assert node["state"] == "DOWN+NOT_RESPONDING" and node["down"] and node["not_responding"]
    assert not node["drained"] and node["reason"] == "Not responding"
    node = parsed(REAL_DOWN_DRAINED)["n06"]
    assert node["flags"] == ["DRAIN", "NOT_RESPONDING"] and node["reason"] == "gpucluster: unreachable"


def test_reason_ends_before_the_fields_slurm_prints_after_it():
    nodes = parsed(HANDMADE_MULTILINE_MIXED)
    assert nodes["gpu017"]["reason"] == "replace PSU 2 (ticket #8812)"
    assert nodes["gpu017"]["reason_user"] == "admin"
    assert nodes["gpu017"]["state"] == "MIXED+DRAIN" and nodes["gpu017"]["busy"]
    assert nodes["gpu018"]["reason"] == "gpucluster: xid 79 on GPU3"
    assert nodes["gpu018"]["reservation"] == "maint_may"


def test_legacy_and_compact_state_words():
    nodes = parsed(HANDMADE_LEGACY)
    assert nodes["old01"]["base"] == "IDLE" and nodes["old01"]["drained"] and nodes["old01"]["not_responding"]
    assert nodes["old01"]["reason"] == "gpucluster: ib port down"
    assert nodes["old02"]["not_responding"] and nodes["old02"]["base"] == "IDLE"
    assert nodes["old03"]["busy"] and nodes["old03"]["drained"]
    assert nodes["old04"]["maintenance"]
    assert nodes["old05"]["down"] and nodes["old05"]["maintenance"]
    assert nodes["old06"]["busy"] and "COMPLETING" in nodes["old06"]["flags"]


def test_not_found_and_errors():
    result = parse_scontrol_show_node(REAL_ONELINE.splitlines()[0] + "\nNode nosuch not found\nNode x1 not found\n")
    assert list(result["nodes"]) == ["n01"]
    assert result["not_found"] == ["nosuch", "x1"]
    assert parse_scontrol_show_node("")["errors"] == ["no NodeName= record in 0 line(s) of output"]
    broken = parse_scontrol_show_node("NodeName=n01 Arch=x86_64 CoresPerSocket=1\n")
    assert broken["errors"] and "n01" in broken["errors"][0] and "State=" in broken["errors"][0]
    failed = parse_scontrol_show_node("slurm_load_node error: Unable to contact slurm controller (connect failure)\n")
    assert failed["errors"] and not failed["nodes"]


def test_parse_node_state_keeps_unknown_flags():
    state = parse_node_state("IDLE+DRAIN+POWERED_DOWN+NEWFLAG")
    assert state["flags"] == ["DRAIN", "POWERED_DOWN", "NEWFLAG"] and state["drained"]
    assert parse_node_state("")["base"] == "UNKNOWN"


# ----------------------------------------------------------------------------- deciding


def node(state, reason=None, name="n01"):
    entry = parse_node_state(state)
    entry.update({"name": name, "reason": reason, "reason_user": None, "reason_time": None, "reservation": None})
    return entry


def test_full_reason_adds_the_tag_once():
    assert full_reason("xid 79") == "gpucluster: xid 79"
    assert full_reason("gpucluster: xid 79") == "gpucluster: xid 79"
    assert full_reason("  two\nlines  ") == "gpucluster: two lines"
    assert full_reason("x", tag="acc:") == "acc: x"
    assert is_ours("gpucluster: x") and not is_ours("operator: gpucluster: x") and not is_ours(None)


def test_drain_idle_node():
    plan = decide(node("IDLE"), "drained", "xid 79")
    assert plan["action"] == "drained" and plan["command"] == "DRAIN"
    assert plan["reason"] == "gpucluster: xid 79"
    assert plan["after"] == {"state": "IDLE+DRAIN", "reason": "gpucluster: xid 79"}


def test_drain_is_idempotent():
    plan = decide(node("IDLE+DRAIN", "gpucluster: xid 79"), "drained", "xid 79")
    assert plan["action"] == "unchanged" and plan["command"] is None


def test_drained_with_our_tag_but_another_text_gets_the_new_reason():
    plan = decide(node("IDLE+DRAIN", "gpucluster: old finding"), "drained", "xid 79")
    assert plan["action"] == "drained" and plan["command"] == "DRAIN"
    assert "old finding" in plan["message"]


def test_node_drained_by_someone_else_is_never_touched():
    other = node("IDLE+DRAIN", "operator: PSU swap")
    plan = decide(other, "drained", "xid 79")
    assert plan["action"] == "skipped" and plan["command"] is None and "operator: PSU swap" in plan["message"]
    plan = decide(other, "resumed")
    assert plan["action"] == "skipped" and plan["command"] is None
    plan = decide(node("DOWN", "operator: dead fan"), "resumed")
    assert plan["action"] == "skipped"


def test_busy_node_is_drained_never_down():
    plan = decide(node("ALLOCATED"), "drained", "x")
    assert plan["command"] == "DRAIN" and plan["after"]["state"] == "ALLOCATED+DRAIN"
    assert "DRAINING" in plan["message"]
    assert decide(node("MIXED"), "drained", "x")["after"]["state"] == "MIXED+DRAIN"


def test_unknown_and_not_responding_nodes_are_drained():
    nodes = parsed(REAL_ONELINE)
    plan = decide(nodes["n01"], "drained", "x")  # IDLE
    assert plan["command"] == "DRAIN"
    unknown = node("UNKNOWN")
    plan = decide(unknown, "drained", "unreachable")
    assert plan["action"] == "drained" and "not responding" in plan["message"]
    slurm_down = parsed(REAL_NOT_RESPONDING)["n06"]
    plan = decide(slurm_down, "drained", "unreachable")
    assert plan["action"] == "drained" and "replaces reason 'Not responding'" in plan["message"]
    assert plan["after"]["state"] == "DOWN+DRAIN+NOT_RESPONDING"


def test_resume_unknown_node_we_drained():
    plan = decide(parsed(REAL_ONELINE)["n06"], "resumed")
    assert plan["action"] == "resumed" and plan["command"] == "RESUME"
    assert "Invalid node state specified" in plan["message"]
    # scontrol answers rc=1 but the drain is gone: the outcome reads the state, not the rc.
    ok, _detail = outcome(node("UNKNOWN+NOT_RESPONDING"), "resumed")
    assert ok
    ok, detail = outcome(node("UNKNOWN+DRAIN", "gpucluster: unreachable"), "resumed")
    assert not ok and "UNKNOWN+DRAIN" in detail


def test_resume_down_node_we_drained_and_down_with_our_reason():
    plan = decide(parsed(REAL_DOWN_DRAINED)["n06"], "resumed")
    assert plan["command"] == "RESUME" and plan["after"]["state"] == "IDLE+NOT_RESPONDING"
    assert decide(node("DOWN", "gpucluster: x"), "resumed")["command"] == "RESUME"


def test_resume_busy_node_we_drained():
    plan = decide(parsed(REAL_ONELINE)["n02"], "resumed")
    assert plan["command"] == "RESUME" and plan["after"]["state"] == "ALLOCATED"


def test_resume_not_drained_is_unchanged():
    for state in ("IDLE", "ALLOCATED", "UNKNOWN+NOT_RESPONDING"):
        assert decide(node(state), "resumed")["action"] == "unchanged"
    assert decide(parsed(REAL_NOT_RESPONDING)["n06"], "resumed")["action"] == "skipped"  # Slurm's own DOWN


def test_future_nodes():
    nodes = parsed(REAL_ONELINE_DRAINED)
    plan = decide(parsed(REAL_ONELINE)["n05"], "drained", "x")
    assert plan["action"] == "skipped" and "FUTURE" in plan["message"] and plan["command"] is None
    assert decide(nodes["n05"], "resumed")["action"] == "skipped"  # operator drained it
    plan = decide(node("FUTURE+DRAIN", "gpucluster: x"), "resumed")
    assert plan["action"] == "resumed" and plan["command"] == "UNDRAIN"  # RESUME would put it into service
    assert plan["after"]["state"] == "FUTURE"
    assert decide(node("FUTURE+DRAIN", "gpucluster: x"), "drained", "x")["action"] == "unchanged"


def test_maintenance_node_is_drained_and_reported():
    plan = decide(parsed(REAL_ONELINE)["n04"], "drained", "x")
    assert plan["action"] == "drained" and "maintenance" in plan["message"]
    plan = decide(parsed(HANDMADE_MULTILINE_MIXED)["gpu018"], "resumed")
    assert plan["action"] == "resumed"


def test_missing_node_and_bad_want():
    assert decide(None, "drained", "x")["action"] == "missing"
    with pytest.raises(ValueError):
        decide(node("IDLE"), "down", "x")


def test_outcome_of_a_drain():
    assert outcome(node("IDLE+DRAIN", "gpucluster: x"), "drained", "gpucluster: x")[0]
    ok, detail = outcome(node("IDLE"), "drained", "gpucluster: x")
    assert not ok and "still IDLE" in detail
    assert outcome(None, "drained", "gpucluster: x")[0] is False


def test_custom_tag():
    plan = decide(node("IDLE+DRAIN", "gpucluster: x"), "resumed", tag="acceptance-42:")
    assert plan["action"] == "skipped"
    assert decide(node("IDLE+DRAIN", "acceptance-42: x"), "resumed", tag="acceptance-42:")["command"] == "RESUME"
    assert DEFAULT_TAG == "gpucluster:"


def test_summary_and_diff_text():
    nodes = parsed(REAL_ONELINE)
    assert summary(nodes["n02"]) == {"state": "ALLOCATED+DRAIN", "reason": "gpucluster: nccl busbw 310 GB/s below 360"}
    text = diff_text({"n01": summary(nodes["n01"]), "n02": summary(nodes["n02"]), "zz": None})
    assert text.splitlines() == ["n01: state=IDLE reason=-",
                                 "n02: state=ALLOCATED+DRAIN reason=gpucluster: nccl busbw 310 GB/s below 360",
                                 "zz: (unknown to Slurm)"]
