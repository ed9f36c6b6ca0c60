# Copyright: (c) 2025, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fake ``dcgmi`` (DCGM 3.3): ``diag -r 1|2|3|4 [-j] [-i ids] [-v]``, ``discovery -l``, ``-v``.

The text table and the JSON follow dcgmi/Diag.cpp, CommandOutputController.cpp and
DcgmiOutput.cpp of NVIDIA/DCGM v3.3.9: 25/46-column stencil rows, messages cut in 45-character
pieces, ``Pass - All`` / ``Pass - GPUs: 0, 2`` / ``Fail - GPU: 1`` rows, ``Warning`` and ``Info``
rows, JSON under "DCGM GPU Diagnostic" with "version", "Driver Version Detected", "GPU Device IDs"
and "GPU Device Serials" at the root (jsoncpp styled). Messages and error codes come from
dcgmlib/dcgm_errors.h. A failed diagnostic exits 226 (DCGM_ST_NVVS_ERROR) or 205
(DCGM_ST_NVVS_ISOLATE_ERROR) as dcgmi does.
"""
from __future__ import annotations

from .common import Result
from .jsonstyle import styled

HEADER = ("+---------------------------+------------------------------------------------+\n"
          "| Diagnostic                | Result                                         |\n"
          "+===========================+================================================+\n")
FOOTER = "+---------------------------+------------------------------------------------+\n"
METADATA = "|-----  Metadata  ----------+------------------------------------------------|\n"
DEPLOYMENT = "|-----  Deployment  --------+------------------------------------------------|\n"
HARDWARE = "+-----  Hardware  ----------+------------------------------------------------+\n"
INTEGRATION = "+-----  Integration  -------+------------------------------------------------+\n"
STRESS = "+-----  Stress  ------------+------------------------------------------------+\n"
NAME_W, INFO_W, CHUNK = 25, 46, 45

DEPLOYMENT_TESTS = ("Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks",
                    "Persistence Mode", "Environment Variables", "Page Retirement/Row Remap",
                    "Graphics Processes", "Inforom")
# per-GPU tests: name -> (first level, category, json order)
GPU_TESTS = {
    "GPU Memory": (2, "Hardware", 0), "Diagnostic": (3, "Hardware", 1), "PCIe": (2, "Integration", 2),
    "SM Stress": (4, "Stress", 3), "Targeted Stress": (3, "Stress", 4), "Targeted Power": (3, "Stress", 5),
    "Memory Bandwidth": (3, "Stress", 6), "Memtest": (4, "Stress", 7), "Pulse Test": (4, "Hardware", 8),
    "EUD Test": (3, "Hardware", 9),
}
TEXT_ORDER = {"Integration": ("PCIe",), "Hardware": ("GPU Memory", "Diagnostic", "Pulse Test"),
              "Stress": ("SM Stress", "Targeted Stress", "Targeted Power", "Memory Bandwidth", "Memtest", "EUD Test")}
LEVEL_NAMES = {"1": 1, "short": 1, "2": 2, "medium": 2, "3": 3, "long": 3, "4": 4, "xlong": 4}
TEST_NAMES = {"pcie": "PCIe", "memory": "GPU Memory", "diagnostic": "Diagnostic", "sm_stress": "SM Stress",
              "sm stress": "SM Stress", "targeted_stress": "Targeted Stress", "targeted stress": "Targeted Stress",
              "targeted_power": "Targeted Power", "targeted power": "Targeted Power",
              "memory_bandwidth": "Memory Bandwidth", "memory bandwidth": "Memory Bandwidth",
              "memtest": "Memtest", "pulse_test": "Pulse Test"}

SYSTEM_TRIAGE = "Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics."
FIELD_DIAG = "Run a field diagnostic on the GPU."
SEVERITY_ISOLATE, SEVERITY_TRIAGE, SEVERITY_RESET = 2, 4, 6
CONNECT_ERROR = ("Error: unable to establish a connection to the specified host: localhost\n"
                 "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n")


class Err:
    """One DCGM error: code (dcgmError_t), category, severity and the message dcgmi shows."""

    def __init__(self, code, category, severity, msg, gpu=None):
        self.code, self.category, self.severity, self.msg, self.gpu = code, category, severity, msg, gpu


def _failure(test, node, g, gid):
    """The error a dcgm_fail fault of ``test`` produces on GPU ``gid``."""
    hw = node.hw
    r = __import__("random").Random("dcgm|%s|%s|%s|%s" % (node.spec.seed, node.name, g.slot, test))
    if test == "GPU Memory":
        msg = "Found %d faulty memory elements on GPU %d %s" % (r.randint(2, 64), gid, FIELD_DIAG)
        return Err(52, 10, SEVERITY_ISOLATE, msg)
    if test == "Targeted Stress":
        msg = "Max stress level of %.1f did not reach desired stress level of %.1f for GPU %d %s" % (
            r.uniform(1500, 2400), 3180.0, gid, SYSTEM_TRIAGE)
        return Err(50, 1, SEVERITY_TRIAGE, msg)
    if test == "Targeted Power":
        target = hw["power_limit_w"] * 0.95
        msg = ("Max power of %.1f did not reach desired power minimum target_power_min_ratio of %.1f for GPU %d "
               "Verify that the clock speeds and GPU utilization are high." % (target * r.uniform(0.6, 0.85), target, gid))
        return Err(63, 14, SEVERITY_TRIAGE, msg)
    if test == "Memory Bandwidth":
        msg = "GPU %d only achieved a memory bandwidth of %.2f GB/s, failing to meet %.2f GB/s for test %d %s" % (
            gid, r.uniform(1200, 1900), 2450.0, 0, SYSTEM_TRIAGE)
        return Err(62, 1, SEVERITY_TRIAGE, msg)
    if test == "PCIe":
        msg = ("Bandwidth of GPU %d in direction h2d of %.2f did not exceed minimum required bandwidth of %.2f. "
               "Verify that your minimum bandwidth setting is appropriate for the topology of each GPU. If so, "
               "and errors are consistent, please run a field diagnostic." % (gid, r.uniform(3.0, 9.0), 20.0))
        return Err(30, 13, SEVERITY_TRIAGE, msg)
    if test == "Diagnostic":
        msg = ("Detected %.2f %s for GPU %d which is below the threshold %.2f Please verify your user-specified "
               "variance tolerance is set appropriately; if so, and if errors are persistent, please run a field "
               "diagnostic." % (r.uniform(20000, 35000), "gigaflops", gid, 48000.0))
        return Err(110, 2, SEVERITY_TRIAGE, msg)
    msg = "Found %d faulty memory elements on GPU %d %s" % (r.randint(1, 8), gid, FIELD_DIAG)
    return Err(52, 10, SEVERITY_ISOLATE, msg)


def _info(test, node, g, gid):
    r = __import__("random").Random("dcgminfo|%s|%s|%s|%s" % (node.spec.seed, node.name, g.slot, test))
    hw = node.hw
    if test == "GPU Memory":
        total = (hw["memory_mib"] - hw["memory_reserved_mib"]) * 1048576
        pct = r.uniform(97.5, 98.6)
        return "GPU %d Allocated %d bytes (%.1f%%)" % (gid, int(total * pct / 100), pct)
    if test == "Targeted Stress":
        return "GPU %d GPU %d relative stress level: %d" % (gid, gid, r.randint(3180, 3320))
    if test == "Targeted Power":
        peak = hw["power_limit_w"] * r.uniform(0.96, 0.99)
        return "GPU %d GPU %d max power: %.1f W average power usage: %.1f W" % (gid, gid, peak, peak - r.uniform(0.5, 4))
    if test == "Diagnostic":
        return "GPU %d GPU %d calculated at approximately %.2f gigaflops during this test" % (
            gid, gid, r.uniform(50000, 52000))
    return ""


class Diag:
    """Results of one diagnostic run on the node's visible GPUs."""

    def __init__(self, node, level, tests, gpu_ids):
        self.node = node
        self.gpus = [g for g in node.visible_gpus if gpu_ids is None or g.index in gpu_ids]
        self.deployment = {name: [] for name in DEPLOYMENT_TESTS}
        for g in self.gpus:
            if g.remap_pending:
                msg = "GPU %d had memory errors and row remappings are pending %s" % (g.index, SYSTEM_TRIAGE)
                self.deployment["Page Retirement/Row Remap"].append(Err(85, 10, SEVERITY_RESET, msg, g.index))
        if tests is None:
            tests = [t for t, spec in GPU_TESTS.items() if spec[0] <= level]
        self.tests = sorted(tests, key=lambda t: GPU_TESTS[t][2])
        self.results = {}  # test -> [(gid, status, [Err], info)]
        for test in self.tests:
            rows = []
            for g in self.gpus:
                gid = g.index
                if test == "EUD Test":
                    rows.append((gid, "Skip", [], ""))
                    continue
                errs = []
                if test in g.dcgm_fail:
                    errs.append(_failure(test, node, g, gid))
                if test == "GPU Memory" and g.ecc_dram_unc:
                    errs.append(Err(4, 10, SEVERITY_ISOLATE, "Detected %d volatile double-bit ECC error(s) in GPU %d. "
                                    "Drain the GPU and reset it or reboot the node." % (g.ecc_dram_unc, gid)))
                status = "Fail" if errs else "Pass"
                rows.append((gid, status, errs, "" if errs else _info(test, node, g, gid)))
            self.results[test] = rows

    def exit_code(self):
        errors = [e for errs in self.deployment.values() for e in errs]
        errors += [e for rows in self.results.values() for _gid, status, errs, _info in rows if status == "Fail"
                   for e in errs]
        if not errors:
            return 0
        return 205 if any(e.severity == SEVERITY_ISOLATE for e in errors) else 226

    # -- text ----------------------------------------------------------------------------------
    @staticmethod
    def _row(name, info):
        name = name if len(name) <= NAME_W else name[:NAME_W - 3] + "..."
        info = info if len(info) <= INFO_W else info[:INFO_W - 3] + "..."
        return "| %-*s | %-*s |\n" % (NAME_W, name, INFO_W, info)

    def _verbose(self, label, text):
        return "".join(self._row(label if pos == 0 else "", text[pos:pos + CHUNK]) for pos in range(0, len(text), CHUNK))

    def _gpu_rows(self, test, verbose):
        rows = self.results[test]
        groups = {s: [row[0] for row in rows if row[1] == s] for s in ("Pass", "Fail", "Warn", "Skip")}
        n = len(rows)
        out = []
        show_details = verbose
        for status in ("Pass", "Skip", "Fail", "Warn"):
            if n and len(groups[status]) == n:
                out.append(self._row(test, "%s - All" % status))
                show_details = verbose or status != "Pass"
                break
        else:
            first = True
            for status in ("Pass", "Fail", "Warn", "Skip"):
                ids = groups[status]
                if not ids:
                    continue
                text = "%s - GPU%s%s   " % (status, ": " if len(ids) == 1 else "s: ", ", ".join(map(str, ids)))
                out.append(self._row(test if first else "", text))
                first = False
                if status != "Pass":
                    show_details = True
        if show_details:
            for gid, _status, errs, _info in rows:
                for e in errs:
                    out.append(self._verbose("Warning", "GPU %d %s" % (gid, e.msg) if not e.msg.startswith("GPU %d " % gid) else e.msg))
            for gid, _status, _errs, info in rows:
                if info:
                    out.append(self._verbose("Info", "GPU %d %s" % (gid, info) if not info.startswith("GPU %d " % gid) else info))
        return "".join(out)

    def text(self, verbose=False):
        node = self.node
        out = ["Successfully ran diagnostic for group.\n", HEADER, METADATA,
               self._row("DCGM Version", node.hw["dcgm"]), self._row("Driver Version Detected", node.driver),
               self._row("GPU Device IDs Detected", ",".join(node.hw["pci_device_id"] for _gpu in self.gpus)),
               DEPLOYMENT]
        for name in DEPLOYMENT_TESTS:
            errs = self.deployment[name]
            out.append(self._row(name, "Fail" if errs else "Pass"))
            for e in errs:
                out.append(self._verbose("Error", e.msg))
        ran = [t for t in self.tests if t in self.results]
        if self.gpus and ran:
            for section, border in (("Integration", INTEGRATION), ("Hardware", HARDWARE)):
                out.append(border)
                out += [self._gpu_rows(t, verbose) for t in TEXT_ORDER[section] if t in ran]
            out.append(STRESS)
            out += [self._gpu_rows(t, verbose) for t in TEXT_ORDER["Stress"] if t in ran]
        out.append(FOOTER)
        return "".join(out)

    # -- json ----------------------------------------------------------------------------------
    def json(self):
        node = self.node
        deployment = []
        for name in DEPLOYMENT_TESTS:
            errs = self.deployment[name]
            entry = {"status": "Fail" if errs else "Pass"}
            if errs:
                entry["gpu_id"] = errs[-1].gpu
                entry["warnings"] = [{"warnings": e.msg, "error_id": e.code, "error_category": e.category,
                                      "error_severity": e.severity} for e in errs]
            deployment.append({"name": name, "results": [entry]})
        categories = [{"category": "Deployment", "tests": deployment}]
        by_cat = {"Integration": [], "Hardware": [], "Stress": []}
        for test in self.tests:
            results = []
            for gid, status, errs, info in self.results[test]:
                entry = {"gpu_id": str(gid), "status": status}
                if errs:
                    entry["warnings"] = [{"warning": "GPU %d %s" % (gid, e.msg) if not e.msg.startswith("GPU ") else e.msg,
                                          "error_id": e.code, "error_category": e.category,
                                          "error_severity": e.severity} for e in errs]
                if info:
                    entry["info"] = info
                results.append(entry)
            if results:
                by_cat[GPU_TESTS[test][1]].append({"name": test, "results": results})
        for cat in ("Integration", "Hardware", "Stress"):
            if by_cat[cat]:
                categories.append({"category": cat, "tests": by_cat[cat]})
        doc = {
            "DCGM GPU Diagnostic": {"test_categories": categories},
            "version": node.hw["dcgm"],
            "Driver Version Detected": node.driver,
            "GPU Device IDs": [node.hw["pci_device_id"] for _gpu in self.gpus],
            "GPU Device Serials": {str(g.index): g.serial for g in self.gpus},
        }
        return styled(doc)


def discovery(node):
    gpus = node.visible_gpus
    hline = "+--------+----------------------------------------------------------------------+\n"

    def row(a, b):
        return "| %-6s | %-68s |\n" % (a, b)
    out = ["%d GPU%s found.\n" % (len(gpus), "" if len(gpus) == 1 else "s"), hline, row("GPU ID", "Device Information"), hline]
    for n, g in enumerate(gpus):
        if n:
            out.append(hline)
        out += [row(str(g.index), "Name: %s" % node.hw["gpu_name"]), row("", "PCI Bus ID: %s" % g.bus_id),
                row("", "Device UUID: %s" % g.uuid)]
    out.append(hline)
    switches = node.hw["nvswitches"]
    shline = "+-----------+\n"
    out += ["%d NvSwitch%s found.\n" % (switches, "" if switches == 1 else "es"), shline, "| Switch ID |\n", shline]
    out += ["| %-9s |\n" % (11 + i) for i in range(switches)]
    out.append(shline)
    out += ["0 CPUs found.\n",
            "+--------+----------------------------------------------------------------------+\n",
            row("CPU ID", "Device Information"),
            "+--------+----------------------------------------------------------------------+\n",
            "+--------+----------------------------------------------------------------------+\n"]
    return "".join(out)


def version(node):
    v = node.hw["dcgm"]
    info = ("Version : {v}\nBuild ID : 3\nBuild Date : 2024-11-12\nBuild Type : Release\n"
            "Commit ID : 0f1dd3ba7f8e8c5d9b4ac4f1f2e6c5a1d4d3b2c1\nBranch Name : rel_dcgm_3_3\nCPU Arch : x86_64\n"
            "Build Platform : Linux 4.15.0-180-generic #189-Ubuntu SMP Wed May 18 14:13:57 UTC 2022 x86_64\n"
            "CRC : 5b2a7cbc8d29f5a1e2d54c3cbf0a4f11\n").format(v=v)
    return info + "\nHostengine build info:\n" + info


USAGE = ("\nUsage: dcgmi subsystem\n   dcgmi diag|discovery|health|nvlink|... [options]\n"
         "\nFor complete USAGE and HELP type: \n   dcgmi --help\n")


def run(node, args):  # noqa: C901
    """Run ``dcgmi ARGS`` on ``node``; return a Result."""
    if not args or args[0] in ("-h", "--help"):
        return Result(USAGE, "", 0 if args else 255)
    if args[0] in ("-v", "--version"):
        return Result(version(node), "", 0)
    if args[0] == "discovery":
        if any(a in ("-l", "--list") for a in args[1:]):
            return Result(discovery(node), "", 0, "dcgmi")
        return Result("", "Error: one of the -l, -i, -c or -a options is needed\n", 255)
    if args[0] != "diag":
        return Result("", "Error: Invalid subsystem '%s'\n%s" % (args[0], USAGE), 255)
    level, tests, json_out, verbose, ids = None, None, False, False, None
    rest = args[1:]
    i = 0
    while i < len(rest):
        arg, val = rest[i], None
        if arg.startswith("--") and "=" in arg:
            arg, val = arg.split("=", 1)
        if arg in ("-r", "--run", "-i", "--gpuList", "-g", "--group", "-p", "--parameters", "-c", "--configfile",
                   "--iterations", "--timeout", "--host", "--debugLogFile", "--statspath", "-d", "--debugLevel"):
            if val is None:
                i += 1
                if i >= len(rest):
                    return Result("", "PARSE ERROR:  \n             Argument: %s\n             Missing a value for this argument!\n" % arg, 255)
                val = rest[i]
            if arg in ("-r", "--run"):
                names = [v.strip() for v in val.split(",") if v.strip()]
                if len(names) == 1 and names[0].lower() in LEVEL_NAMES:
                    level = LEVEL_NAMES[names[0].lower()]
                else:
                    tests = []
                    for name in names:
                        canon = TEST_NAMES.get(name.lower())
                        if canon is None:
                            return Result("", "Error: requested test \"%s\" was not found among possible test choices.\n"
                                          % name, 255)
                        tests.append(canon)
                    level = max(GPU_TESTS[t][0] for t in tests)
            elif arg in ("-i", "--gpuList"):
                try:
                    ids = {int(x) for x in val.split(",") if x.strip()}
                except ValueError:
                    return Result("", "Error: invalid GPU list '%s'\n" % val, 255)
        elif arg in ("-j", "--json"):
            json_out = True
        elif arg in ("-v", "--verbose"):
            verbose = True
        else:
            return Result("", "PARSE ERROR:  \n             Argument: %s\n             Couldn't find match for argument\n" % arg, 255)
        i += 1
    if level is None:
        return Result("", "Error: the -r (--run) option is required\n", 255)
    diag = Diag(node, level, tests, ids)
    key = "dcgmi_diag_r%d" % level
    if json_out:
        return Result(diag.json(), "", diag.exit_code(), key)
    return Result(diag.text(verbose), "", diag.exit_code(), key)
