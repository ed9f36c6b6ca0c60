#!/usr/bin/env bash
# make demo: start the simulated 16-node cluster on real Slurm, run acceptance.yml against it,
# show the verdict and where the artifacts are, stop the cluster. Exit 0 when the run itself
# worked (its results.json exists), whatever the cluster's verdict.
# DEMO_TRANSPORT=ssh: reach the nodes over real SSH with become (one sshd per simulated node, an
# unprivileged login user, sudo; docs/simulated-cluster.md) instead of local connections.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
repo=$PWD
spec=${DEMO_SPEC:-sim/clusters/demo.yml}
run_dir=${DEMO_RUN_DIR:-$repo/.build/sim/demo}
inventory=${DEMO_INVENTORY:-$repo/.build/sim/demo-inventory}
log=${DEMO_LOG:-$repo/.build/demo-playbook.log}
transport=${DEMO_TRANSPORT:-local}
case $transport in
    local | ssh) ;;
    *) echo "demo: DEMO_TRANSPORT must be local or ssh, got '$transport'" >&2; exit 2 ;;
esac
export GPUCLUSTER_ARTIFACTS_DIR=${GPUCLUSTER_ARTIFACTS_DIR:-$repo/artifacts}
export ANSIBLE_CONFIG=$repo/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$repo/.build/collections
py=$repo/.venv/bin/python

stop() { "$py" sim/clusterctl stop --run-dir "$run_dir" >/dev/null 2>&1 || true; }
trap stop EXIT

echo "== starting the simulated cluster ($spec) on real Slurm, $transport connections"
"$py" sim/clusterctl start "$spec" --run-dir "$run_dir" --transport "$transport" >/dev/null || exit 1
SLURM_CONF=$run_dir/etc/slurm.conf sinfo -o '%P %D %t %N' || true
"$py" sim/clusterctl inventory "$spec" --run-dir "$run_dir" --out "$inventory" --transport "$transport" >/dev/null || exit 1

echo "== injected faults"
"$py" - "$spec" <<'PY'
import sys, yaml
for f in yaml.safe_load(open(sys.argv[1])).get("faults") or []:
    print("  %s: %s" % (f.get("node", f.get("leaf")), ", ".join("%s=%s" % kv for kv in f.items() if kv[0] != "node")))
PY

echo "== ansible-playbook playbooks/acceptance.yml -i $inventory"
count_runs() { find "$GPUCLUSTER_ARTIFACTS_DIR" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l; }
before=$(count_runs)
start=$(date +%s)
mkdir -p "$(dirname "$log")"
"$repo/.venv/bin/ansible-playbook" -i "$inventory/hosts.yml" playbooks/acceptance.yml "$@" > "$log" 2>&1
rc=$?
echo "   (playbook exit $rc after $(( $(date +%s) - start )) s; full log: $log)"
sed -n '/^gpucluster.acceptance verdict/,$p' "$log"
latest=$(find "$GPUCLUSTER_ARTIFACTS_DIR" -mindepth 1 -maxdepth 1 -type d -printf '%T@ %p\n' 2>/dev/null | sort -n | tail -1 | cut -d' ' -f2-)
after=$(count_runs)
if [ -z "$latest" ] || [ "$after" -le "$before" ] || [ ! -s "$latest/results.json" ]; then
    echo "demo: the run wrote no results; see $log" >&2
    exit 1
fi
echo "== artifacts: $latest"
ls -1 "$latest"
