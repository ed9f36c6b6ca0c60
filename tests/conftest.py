"""Test-wide setup: import the collection through its ansible_collections path, hypothesis profiles."""
import os
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings, strategies as st

REPO = Path(__file__).resolve().parents[1]
COLLECTIONS = REPO / ".build" / "collections"
LINK = COLLECTIONS / "ansible_collections" / "gpucluster" / "acceptance"
FIXTURES = REPO / "tests" / "fixtures"

if not LINK.exists():
    LINK.parent.mkdir(parents=True, exist_ok=True)
    LINK.symlink_to(REPO)
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))
# Integration tests import their harness (tests/integration/harness.py) by name.
sys.path.insert(0, str(REPO / "tests" / "integration"))


def garbage(digits=5000):
    """Any JSON-like value, odd where it can be: None, bools, huge ints, inf/NaN, a number of
    ``digits`` digits, "1e309", NUL, "²", text, nested lists and dicts. The family property tests
    (filters, modules, actions) draw their bad inputs from this one strategy."""
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 6, 10 ** 6), st.integers(),
                        st.floats(allow_nan=True, allow_infinity=True),
                        st.sampled_from(["", "x", "9" * digits, "1e309", "\x00", "\u00b2", "gpu[001-004]", "-1"]),
                        st.text(max_size=12))

    def containers(inner):
        return st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4))
    return st.recursive(scalars, containers, max_leaves=10)


# CI runs at least 2000 generated cases per property; a quick local profile keeps iteration fast.
settings.register_profile(
    "ci", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


# make test runs the integration tests on two pytest-xdist workers: about half
# of a test's time is spent waiting (Slurm, timeouts, tools that take their time), not computing.
# Clusters side by side are safe by design (one start or stop at a time, each cluster its own
# ports and loopback addresses, sim/). Tests that share something else stay on one worker:
XDIST_GROUPS = (
    ("tests/integration/provision/", "host-apt"),  # this host's apt sources, pins and packages
    # the session's 16-node fault-matrix run (fault_matrix_local), judged and compared by these
    ("tests/integration/acceptance/test_faults.py", "fault-matrix"),
    ("tests/integration/acceptance/test_ssh_transport.py", "fault-matrix"),
    ("tests/integration/acceptance/test_srun_transport.py", "fault-matrix"),
    # the session's make demo run (demo_run), replayed by one and looked at in Chromium by the other
    ("tests/integration/acceptance/test_demo_replay.py", "demo"),
    ("tests/integration/report/test_report_in_chromium.py", "demo"),
)


def xdist_group_of(nodeid):
    """The group a test runs in: the first of XDIST_GROUPS its path starts with, else its own."""
    return next((group for prefix, group in XDIST_GROUPS if nodeid.startswith(prefix)), nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's load scheduling, a group of tests being one unit given to one worker. (Its own
    --dist loadgroup marks tests by changing their node id, which pytest 9 no longer reads.)"""
    from xdist.scheduler import LoadScopeScheduling  # pylint: disable=import-outside-toplevel

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return xdist_group_of(nodeid)
    return GroupScheduling(config, log)


def _integration_problems():
    problems = []
    if os.geteuid() != 0:
        problems.append("the simulated cluster runs Slurm as root")
    for tool in ("/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged"):
        if not Path(tool).exists():
            problems.append("%s is missing" % tool)
    if not shutil.which("srun"):
        problems.append("srun is missing")
    return problems


def pytest_runtest_setup(item):
    """Integration tests drive real Slurm daemons: fail (never skip) when they cannot."""
    if item.get_closest_marker("integration"):
        problems = _integration_problems()
        if problems:
            pytest.fail("integration prerequisites: %s; run tools/install-system-deps.sh (make test does)"
                        % "; ".join(problems), pytrace=False)


def _leftover_test_daemons(basetemp):
    """slurmctld/slurmd (and accounting's mariadbd/slurmdbd) processes of this session's temporary
    directories that still run."""
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path("/proc/%s/cmdline" % pid).read_bytes().decode(errors="replace").split("\0")
            state = Path("/proc/%s/stat" % pid).read_text().rsplit(")", 1)[1].split()[0]
            name = os.path.basename(argv[0])
            if name == "slurmdbd":  # its command line names no file: its SLURM_CONF does
                argv += [v.split("=", 1)[1] for v in Path("/proc/%s/environ" % pid).read_bytes().decode(
                    errors="replace").split("\0") if v.startswith("SLURM_CONF=")]
        except OSError:
            continue
        if name in ("slurmctld", "slurmd", "mariadbd", "slurmdbd") and state != "Z" \
                and any(arg.startswith(basetemp) or arg.startswith("--defaults-file=" + basetemp) for arg in argv):
            left.append("%s %s" % (pid, " ".join(argv).strip()))
    return left


def pytest_sessionfinish(session, exitstatus):
    """make test must leave no Slurm (or accounting) daemon behind: a leftover one fails the run."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None:
        return
    left = _leftover_test_daemons(str(factory.getbasetemp()))
    if left:
        sys.stderr.write("\nSlurm daemons left running by the tests:\n  %s\n" % "\n  ".join(left))
        session.exitstatus = 1


@pytest.fixture(scope="session", autouse=True)
def simulated_cluster_pool(tmp_path_factory):
    """The session's simulated clusters, shared by shape (tests/integration/cluster_pool.py); every
    one of them stopped when the session ends, before the leftover-daemon check below."""
    # tests/integration/ is on sys.path (above); imported here so that collection does not need sim/.
    import cluster_pool  # pylint: disable=import-outside-toplevel
    pool = cluster_pool.POOL
    pool.root = tmp_path_factory.mktemp("pool")
    try:
        yield pool
    finally:
        pool.close()
        pool.root = None


@pytest.fixture(scope="session")
def fault_matrix_local(tmp_path_factory):
    """acceptance.yml on 16 nodes with the fault matrix's RUN_A (one fault a node, its host_vars)
    over local connections, run once: test_faults judges it, test_ssh_transport and
    test_srun_transport compare their transport's run with it."""
    # tests/integration/ is on sys.path (above).
    from fault_matrix import RUN_A, SKIP, faults, write_host_vars  # pylint: disable=import-outside-toplevel
    from harness import SimRun, spec  # pylint: disable=import-outside-toplevel
    with SimRun(spec("fa", faults(RUN_A)), tmp_path_factory.mktemp("fa")) as sim:
        write_host_vars(sim.inventory)
        yield sim.acceptance("--skip-tags", SKIP)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """tools/demo.sh (what `make demo` runs) once for the session: the 16-node demo cluster, every
    stage, stopped on the way out. test_demo_replay replays it; test_report_in_chromium looks at its
    report. Returns (work dir, run dir, playbook log text, playbook exit status)."""
    # tests/integration/ is on sys.path (above).
    from harness import demo  # pylint: disable=import-outside-toplevel
    return demo(tmp_path_factory.mktemp("demo"))
