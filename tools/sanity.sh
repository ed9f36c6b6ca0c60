#!/usr/bin/env bash
# Run ansible-test sanity offline on a copy of the collection placed where ansible-test wants it.
set -euo pipefail
dest=${1:?usage: sanity.sh DEST}
src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$dest"
mkdir -p "$dest"
# Tracked and untracked-but-not-ignored files only: no venv, no build output.
(cd "$src" && git ls-files -co --exclude-standard -z | xargs -0 -I{} cp --parents {} "$dest")
# ansible-test bootstraps pip in each sanity venv from a script it downloads; offline, give it one
# that uses ensurepip in a subprocess (in-process ensurepip loses the machine's pip config).
pip_version=$(python -c 'import re, ansible_test, pathlib; p = pathlib.Path(ansible_test.__file__).parent / "_internal/python_requirements.py"; print(re.search(r"pip=.([0-9.]+).", p.read_text()).group(1))')
cache=~/.ansible/test/cache/get_pip_${pip_version//./_}.py
mkdir -p "$(dirname "$cache")"
cat > "$cache" <<'PY'
import subprocess
import sys
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
# get-pip's own flags mean "do not install these": pip install has no such options.
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "pip", "install", "--upgrade"] + args)
PY
cd "$dest"
ansible-test sanity --venv --python "$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" --color no
