"""Real captured tool outputs, replayed through acceptance.yml, must get the right verdict.

tests/fixtures/captured/ holds one folder per case (one replayed node, one file per tool as the
stages collect them), cases.yml the hardware profile and the expected outcome of each case and
SOURCES.md where every file comes from. For each profile one real ansible-playbook run replays
its cases (`-e acceptance_replay_dir=...`) and results.json is read back:

- a healthy case has no fail/error check;
- a faulty case has, for every expected fault, a fail/error check of that stage naming the
  component (in its component or its message) with the fault's words in its message and
  non-empty evidence, and no fail/error check in a stage that no expected fault names;
- either way every captured stage was judged (a pass, fail or error check, not only skips): a
  stage that did not run, or skipped what it was given, proves nothing.

The fabric, workload and rdma stages run across nodes from the controller and have no per-node
captures to replay, so they are skipped. The cluster-wide comparisons (version uniformity, peer
bandwidth) compare the cases with each other, which are unrelated machines, so they are left out
of the per-case verdicts and only listed. A table (case, expected, got) is written at the end.
"""
import re
import time

import pytest
import yaml

from harness import REPO, VENV_BIN, playbook

from ansible_collections.gpucluster.acceptance.plugins.module_utils._stages import STAGES

CORPUS = REPO / "tests" / "fixtures" / "captured"
CASES_FILE = CORPUS / "cases.yml"
SKIP_TAGS = "fabric,workload,rdma"
BAD = ("fail", "error")
# Checks that compare nodes with each other (_cluster.py): meaningless across unrelated machines.
CLUSTER_WIDE = ("uniform_", "peers_")
TOOLS = dict((tool, stage) for stage, (tools, _judge) in STAGES.items() for tool in tools)
SHIPPED_PROFILES = sorted(p.stem for p in (REPO / "profiles").glob("*.yml") if not p.stem.startswith("_"))


def load_cases():
    data = yaml.safe_load(CASES_FILE.read_text())
    return data["cases"]


CASES = load_cases()


def profile_arg(profile):
    """The acceptance_profile value: a shipped profile's name, or the absolute path of ours."""
    if profile in SHIPPED_PROFILES:
        return profile
    return str((CORPUS / profile).resolve())


def expected_faults(case):
    expected = CASES[case]["expected"]
    return [] if expected == "healthy" else list(expected["faults"])


def describe_expected(case):
    faults = expected_faults(case)
    if not faults:
        return "healthy"
    return "; ".join("%s %s %s" % (f["stage"], f.get("component") or "-", "/".join(f["words"])) for f in faults)


_PCI = re.compile(r"^(?:[0-9a-f]{4,8}:)?([0-9a-f]{2}):([0-9a-f]{2})(?:\.[0-7])?$", re.IGNORECASE)
_PCI_IN_TEXT = re.compile(r"(?<![\w:])(?:[0-9a-f]{4,8}:)?([0-9a-f]{2}):([0-9a-f]{2})(?:\.[0-7])?(?![\w:])",
                          re.IGNORECASE)


def _names(component, text):
    """component appears in text as a whole name (GPU1 is not GPU10; GPU0 is in GPU0<->GPU1).

    A PCI address is the same device in any of its printed forms: 00000000:18:00.0, 0000:18:00,
    18:00.0 (the domain is 0 on these machines).
    """
    pci = _PCI.match(component)
    if pci:
        wanted = (pci.group(1).lower(), pci.group(2).lower())
        return any((m.group(1).lower(), m.group(2).lower()) == wanted for m in _PCI_IN_TEXT.finditer(text or ""))
    pattern = r"(?<![\w:.])%s(?![\w:])" % re.escape(component)
    return re.search(pattern, text or "", re.IGNORECASE) is not None


def matches(fault, check):
    if check["stage"] != fault["stage"]:
        return False
    component = fault.get("component")
    if component and not (_names(component, str(check.get("component") or ""))
                          or _names(component, check.get("message") or "")):
        return False
    message = (check.get("message") or "").lower()
    return all(str(word).lower() in message for word in fault["words"])


def short(check):
    where = check.get("component") or "-"
    message = " ".join((check.get("message") or "").split())
    if len(message) > 110:
        message = message[:107] + "..."
    return "%s %s/%s [%s] %s" % (check["status"], check["stage"], check["check"], where, message)


def captured_stages(case):
    return sorted(set(TOOLS[p.stem] for p in (CORPUS / case).iterdir() if p.stem in TOOLS))


def judge_case(case, checks):
    """(ok, problems, got): problems says what is wrong with the verdict of one case."""
    own = [c for c in checks if c.get("node") == case]
    bad = [c for c in own if c["status"] in BAD and not str(c.get("check", "")).startswith(CLUSTER_WIDE)]
    problems = []
    if not own:
        problems.append("no check at all for this node (was it replayed?)")
    # A captured output that no pass/fail/error check judged is no verdict at all (a stage that did
    # not run, or one that only skipped): healthy and faulty cases alike must be judged.
    for stage in captured_stages(case):
        if not any(c["stage"] == stage and c["status"] != "skip" for c in own):
            problems.append("%s was captured but not judged (no pass, fail or error check)" % stage)
    faults = expected_faults(case)
    for fault in faults:
        found = [c for c in bad if matches(fault, c)]
        if not found:
            near = [c for c in bad if c["stage"] == fault["stage"]]
            problems.append("missed %s fault on %s with %r%s" % (
                fault["stage"], fault.get("component") or "the node", fault["words"],
                " (that stage: %s)" % "; ".join(short(c) for c in near) if near else
                " (silent pass: nothing failed in that stage)"))
        elif not any(c.get("evidence") for c in found):
            problems.append("%s fault on %s has no evidence lines: %s" % (
                fault["stage"], fault.get("component") or "the node", short(found[0])))
    stages = set(f["stage"] for f in faults)
    for check in bad:
        if check["stage"] not in stages:
            problems.append(("false alarm: " if not faults else "unexpected: ") + short(check))
    got = "; ".join(short(c) for c in bad) or "no fail/error"
    return not problems, problems, got


class Replayed(dict):
    """The replayed checks; a short repr keeps the thousands of checks out of failure reports."""

    def __repr__(self):
        return "<%d checks of %d replayed nodes>" % (
            len(self["checks"]), len(set(c.get("node") for c in self["checks"])))


@pytest.fixture(scope="module")
def replayed(tmp_path_factory, request):
    """{case: checks of its node} from one acceptance.yml replay per profile."""
    groups = {}
    for case, spec in sorted(CASES.items()):
        groups.setdefault(spec["profile"], []).append(case)
    checks, runs = [], []
    for profile, cases in sorted(groups.items()):
        work = tmp_path_factory.mktemp("replay")
        hosts = dict((case, {"ansible_connection": "local",
                             "ansible_python_interpreter": str(VENV_BIN / "python")}) for case in cases)
        inventory = work / "inventory.yml"
        inventory.write_text(yaml.safe_dump({"all": {"children": {"gpu_nodes": {"hosts": hosts}}}}))
        started = time.monotonic()
        run = playbook(inventory, work / "artifacts", "-e", "acceptance_replay_dir=%s" % CORPUS,
                       "-e", "acceptance_profile=%s" % profile_arg(profile), "--skip-tags", SKIP_TAGS)
        seconds = time.monotonic() - started
        runs.append((profile, len(cases), seconds, run))
        if run.results is None:
            pytest.fail("replay with profile %s wrote no results.json (rc %s):\n%s"
                        % (profile, run.rc, run.output[-3000:]))
        checks.extend(run.results["checks"])
    yield Replayed(checks=checks)
    # After the last case: the whole table, shown whether the cases passed or not.
    lines = ["", "replayed %d cases in %d runs of acceptance.yml (%s)" % (
        len(CASES), len(runs), ", ".join("%s: %d cases %.0fs" % (p, n, s) for p, n, s, _r in runs))]
    lines.extend(verdict_table(checks))
    lines.append("cluster-wide checks across these unrelated nodes, not judged: %s" % (
        "; ".join(sorted(set("%s %s" % (c["check"], c.get("node")) for c in checks
                             if str(c.get("check", "")).startswith(CLUSTER_WIDE) and c["status"] in BAD)))
        or "none failed"))
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            for line in lines:
                reporter.write_line(line)


def verdict_table(checks):
    """case, expected, got and the verdict on the verdict, one block per case, then the totals."""
    lines = []
    misjudged = false_alarms = faults = found = 0
    for case in sorted(CASES):
        ok, problems, got = judge_case(case, checks)
        misjudged += not ok
        lines.append("%-44s %s" % (case, "ok" if ok else "MISJUDGED"))
        lines.append("    expected: %s" % describe_expected(case))
        lines.append("    got:      %s" % got)
        lines.extend("    !! %s" % problem for problem in problems)
        expected = expected_faults(case)
        faults += len(expected)
        found += len(expected) - sum(1 for p in problems if p.startswith("missed "))
        false_alarms += not expected and any(p.startswith("false alarm") for p in problems)
    healthy = sum(1 for case in CASES if not expected_faults(case))
    lines.append("%d of %d cases misjudged; %d of %d expected faults found (%.0f %%); %d of %d healthy cases "
                 "with a false alarm" % (misjudged, len(CASES), found, faults, 100.0 * found / max(faults, 1),
                                         false_alarms, healthy))
    return lines


@pytest.mark.integration
@pytest.mark.parametrize("case", sorted(CASES))
def test_replayed_capture_gets_the_right_verdict(case, replayed):
    ok, problems, got = judge_case(case, replayed["checks"])
    assert ok, "%s (profile %s)\n  expected: %s\n  got:      %s\n  problems:\n    %s" % (
        case, CASES[case]["profile"], describe_expected(case), got, "\n    ".join(problems))


# --- the corpus itself (no ansible): every case is complete, named right and sourced --------------

def test_every_case_folder_is_described_and_every_described_case_exists():
    folders = set(p.name for p in CORPUS.iterdir() if p.is_dir() and p.name != "profiles")
    assert folders == set(CASES), (sorted(folders - set(CASES)), sorted(set(CASES) - folders))


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_files_profile_and_expectations_are_consistent(case):
    spec = CASES[case]
    files = sorted(p.name for p in (CORPUS / case).iterdir())
    assert files, case
    unknown = [f for f in files if not f.endswith(".txt") or f[:-4] not in TOOLS]
    assert not unknown, "%s: not a tool name of any stage: %s (known: %s)" % (case, unknown, sorted(TOOLS))
    profile = spec["profile"]
    assert profile in SHIPPED_PROFILES or (CORPUS / profile).is_file(), profile
    stages_here = set(TOOLS[f[:-4]] for f in files)
    expected = spec["expected"]
    assert expected == "healthy" or (isinstance(expected, dict) and expected.get("faults")), expected
    for fault in expected_faults(case):
        assert set(fault) <= {"stage", "component", "words"} and fault["words"], fault
        assert fault["stage"] in stages_here, (
            "%s: a %s fault cannot be found, no %s tool was captured" % (case, fault["stage"], fault["stage"]))


def test_sources_name_every_file():
    sources = (CORPUS / "SOURCES.md").read_text()
    # profiles/ holds our own files; each says in its comments which capture needs it and why.
    missing = [str(p.relative_to(CORPUS)) for case in sorted(CASES) for p in sorted((CORPUS / case).iterdir())
               if "`%s`" % p.relative_to(CORPUS) not in sources]
    assert not missing, "files without a source in SOURCES.md: %s" % missing
