# Copyright: (c) 2026, gpucluster.acceptance contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How much the test suite checks: the tests pytest collects and the assert statements under tests/.

    python tools/test_counts.py     both numbers, one line each
    python tools/test_counts.py --json     {"tests": N, "asserts": N, "assert_files": N}
    python tools/test_counts.py --min-tests N --min-asserts N
                                    exit 1 when either count fell below N (a change that drops
                                    tests or assertions to make the suite faster is caught)

Asserts are counted in the source (``assert`` statements, not how often they run), so a
parametrised test counts its assertions once and its cases many times: both numbers are printed.
"""
import argparse
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def count_asserts(root):
    """(assert statements, files) in every Python file under ``root``."""
    total = files = 0
    for path in sorted(Path(root).rglob("*.py")):
        if "fixtures" in path.relative_to(root).parts[:1]:
            continue  # fixtures are captured outputs and their capture scripts, not tests
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (OSError, SyntaxError, ValueError) as exc:
            raise SystemExit("test_counts: cannot read %s: %s" % (path, exc)) from None
        found = sum(isinstance(node, ast.Assert) for node in ast.walk(tree))
        if found:
            total += found
            files += 1
    return total, files


def count_tests(python=None):
    """The number of test items ``pytest --collect-only`` finds under tests/."""
    cmd = [python or sys.executable, "-m", "pytest", "tests", "--collect-only", "-q", "-p", "no:randomly"]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run(cmd, cwd=str(REPO), capture_output=True, text=True, timeout=600, check=False, env=env)
    items = [line for line in proc.stdout.splitlines() if "::" in line and not line.startswith(" ")]
    if proc.returncode != 0 or not items:
        raise SystemExit("test_counts: pytest --collect-only failed (rc=%d):\n%s%s"
                         % (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))
    return len(items)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--min-tests", type=int, default=0)
    parser.add_argument("--min-asserts", type=int, default=0)
    args = parser.parse_args(argv)
    tests = count_tests()
    asserts, files = count_asserts(REPO / "tests")
    if args.json:
        print(json.dumps({"tests": tests, "asserts": asserts, "assert_files": files}))
    else:
        print("tests: %d collected" % tests)
        print("asserts: %d assert statements in %d files under tests/" % (asserts, files))
    short = []
    if tests < args.min_tests:
        short.append("%d tests < %d" % (tests, args.min_tests))
    if asserts < args.min_asserts:
        short.append("%d asserts < %d" % (asserts, args.min_asserts))
    if short:
        print("test_counts: fewer than before: %s" % "; ".join(short), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
