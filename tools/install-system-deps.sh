#!/usr/bin/env bash
# Install the Debian packages make test and make demo need: a real Slurm on this one host, and
# the tools the tests drive.
# Idempotent: when every package is already installed, apt is not touched (repeat runs are fast).
# Usage: tools/install-system-deps.sh            (as root, or via sudo when available)
#        PACKAGES_EXTRA="pkg1 pkg2" tools/install-system-deps.sh
set -euo pipefail

# One place to add packages (the fake-tool and accounting parts may extend this list).
PACKAGES=(
  slurmctld
  slurmd
  slurm-client
  munge
  openssh-client   # unreachable nodes in the sim inventory: Ansible connects over ssh to a closed port
  openssh-server sudo   # transport: ssh specs: one sshd per simulated node (own configs; the system sshd is not used)
  shellcheck       # ansible-test sanity lints the collection's shell scripts with it
  dpkg-dev         # dpkg-scanpackages: the provisioning tests' local apt repository
  libopenmpi-dev openmpi-bin   # nccl-tests stand-in built with MPI=1 in the provisioning tests
  python3-apt      # ansible.builtin.apt in the provisioning roles' molecule scenarios
  prometheus       # promtool check metrics for the node_exporter textfile output
  chromium fonts-dejavu-core   # the HTML report is opened and screenshotted headless
  rsync            # the data-transfer tests copy a tree with it, as users do
  slurmdbd mariadb-server   # accounting: true specs (sim/accounting.py): real sacct / sacctmgr records of job histories
  fio              # the checkpoint probe's storage benchmark
)
# shellcheck disable=SC2206  # word splitting of the extra list is intended
[[ -n "${PACKAGES_EXTRA:-}" ]] && PACKAGES+=(${PACKAGES_EXTRA})

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "install-system-deps: all installed (${PACKAGES[*]})"
  exit 0
fi

sudo=()
if ((EUID != 0)); then
  command -v sudo >/dev/null || { echo "install-system-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi

echo "install-system-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when they are missing or older than a day.
if [[ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages' -mtime -1 -print -quit 2>/dev/null)" ]]; then
  "${sudo[@]}" apt-get update -qq
fi
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-system-deps: done"
